// What a page's form holds, kept for the browser tab (sessionStorage) while
// the user moves to another page and back, or reloads: the strategy built
// on the replay page, the agent's prompt, settings and code (a generated
// code cost one of the month's generations). A draft belongs to the
// customer who wrote it and goes with the sign-out.

const PREFIX = 'updown.draft.';

interface Stored {
  customer: string;
  value: unknown;
}

function storage(): Storage | null {
  try {
    return window.sessionStorage;
  } catch {
    return null; // storage refused (a privacy setting): forms start afresh, as before
  }
}

/** The customer's draft of a page, or null. */
export function loadDraft<T>(customer: string, page: string): T | null {
  const raw = storage()?.getItem(PREFIX + page);
  if (!raw) return null;
  try {
    const s = JSON.parse(raw) as Stored;
    return s.customer === customer ? (s.value as T) : null;
  } catch {
    return null;
  }
}

/** Keeps the customer's draft of a page. */
export function saveDraft(customer: string, page: string, value: unknown): void {
  try {
    storage()?.setItem(PREFIX + page, JSON.stringify({ customer, value } satisfies Stored));
  } catch {
    // full or refused: the form still works, it is only not kept
  }
}

/** Forgets every page's draft (signing out). */
export function clearDrafts(): void {
  const s = storage();
  if (!s) return;
  for (const k of Object.keys(s)) if (k.startsWith(PREFIX)) s.removeItem(k);
}
