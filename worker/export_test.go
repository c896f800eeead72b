package worker

// AsynqLogEvery is how often one of Asynq's messages is let through
// (asynqLogEvery), for the tests of package worker_test.
const AsynqLogEvery = asynqLogEvery
