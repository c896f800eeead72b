package api

import (
	"errors"
	"fmt"
	"io"

	"github.com/danielgtaylor/huma/v2"

	"github.com/updown/updown/jobs/transfer"
)

// parquetWriter is a response body with a Parquet form (DESIGN 13), served
// on Accept: application/vnd.apache.parquet. The routes are those with a
// CSV form (csvRoute).
type parquetWriter interface {
	WriteParquet(w io.Writer) error
}

var parquetFormat = huma.Format{
	Marshal: func(w io.Writer, v any) error {
		if p, ok := v.(parquetWriter); ok {
			return p.WriteParquet(w)
		}
		return fmt.Errorf("api: %T has no Parquet form", v)
	},
	Unmarshal: func([]byte, any) error { return errors.New("request bodies are JSON, not Parquet") },
}

// WriteParquet writes the page's snapshots as one Parquet file, with the
// books as lists of {price, size} when the page has them.
func (p *snapshotPageBody) WriteParquet(w io.Writer) error {
	if p.books {
		pw := transfer.NewParquetWriter[transfer.ParquetBookSnapshot](w)
		for i := range p.Snapshots {
			if err := pw.Write(transfer.ParquetBookSnapshotRow(p.Market.Slug, &p.Snapshots[i])); err != nil {
				return err
			}
		}
		return pw.Close()
	}
	pw := transfer.NewParquetWriter[transfer.ParquetSnapshot](w)
	for i := range p.Snapshots {
		if err := pw.Write(transfer.ParquetSnapshotRow(p.Market.Slug, &p.Snapshots[i])); err != nil {
			return err
		}
	}
	return pw.Close()
}

// WriteParquet writes the depth history page as one Parquet file.
func (p *depthPageBody) WriteParquet(w io.Writer) error {
	pw := transfer.NewParquetWriter[transfer.ParquetDepth](w)
	for i := range p.Data {
		if err := pw.Write(transfer.ParquetDepthRow(&p.Data[i])); err != nil {
			return err
		}
	}
	return pw.Close()
}
