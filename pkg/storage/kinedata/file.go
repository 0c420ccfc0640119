package kinedata

import (
	"bufio"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"time"
)

// FileFormat names the backup file format; FileVersion is its version.
const (
	FileFormat  = "cellfed-kine-backup"
	FileVersion = 1
)

// Header opens a backup file. The file is gzip'd JSON lines: this header,
// one Row per line in id order, then a Trailer.
type Header struct {
	Format  string    `json:"format"`
	Version int       `json:"version"`
	Backend string    `json:"backend"`
	TakenAt time.Time `json:"takenAt"`
	// MaxRevision is the newest row (the store's revision), NextRevision
	// the highest id the database had handed out, CompactRevision the
	// compaction marker's revision.
	MaxRevision     int64 `json:"maxRevision"`
	NextRevision    int64 `json:"nextRevision"`
	CompactRevision int64 `json:"compactRevision"`
	Rows            int64 `json:"rows"`
	// Identity is the plane identity record (PKI fingerprints) the store
	// holds, as stored; empty when it holds none.
	Identity json.RawMessage `json:"identity,omitempty"`
	// KMSKeyIDs are the KMS keys the store's encrypted values need.
	KMSKeyIDs []string `json:"kmsKeyIDs,omitempty"`
}

// Trailer closes a backup file: a complete file ends with it.
type Trailer struct {
	End  bool   `json:"end"`
	Rows int64  `json:"rows"`
	Hash string `json:"sha256"` // over every row's RowHash, in order
}

// FileWriter writes a backup file.
type FileWriter struct {
	gz   *gzip.Writer
	enc  *json.Encoder
	rows int64
	sum  hash.Hash
}

// NewFileWriter writes h to w and returns a writer for the rows.
func NewFileWriter(w io.Writer, h Header) (*FileWriter, error) {
	h.Format, h.Version = FileFormat, FileVersion
	gz := gzip.NewWriter(w)
	fw := &FileWriter{gz: gz, enc: json.NewEncoder(gz), sum: sha256.New()}
	if err := fw.enc.Encode(h); err != nil {
		return nil, fmt.Errorf("writing the backup header: %w", err)
	}
	return fw, nil
}

// Write appends one row.
func (w *FileWriter) Write(r Row) error {
	h := RowHash(r)
	w.sum.Write(h[:])
	w.rows++
	return w.enc.Encode(r)
}

// Close writes the trailer and flushes.
func (w *FileWriter) Close() error {
	if err := w.enc.Encode(Trailer{End: true, Rows: w.rows, Hash: hex.EncodeToString(w.sum.Sum(nil))}); err != nil {
		return fmt.Errorf("writing the backup trailer: %w", err)
	}
	return w.gz.Close()
}

// FileReader reads a backup file.
type FileReader struct {
	Header Header
	dec    *json.Decoder
	rows   int64
	sum    hash.Hash
	done   bool
}

// ErrCorrupt is wrapped by every error about a damaged backup file.
var ErrCorrupt = errors.New("the backup file is damaged or incomplete")

// NewFileReader reads the header.
func NewFileReader(r io.Reader) (*FileReader, error) {
	gz, err := gzip.NewReader(bufio.NewReader(r))
	if err != nil {
		return nil, fmt.Errorf("%w: not gzip: %v", ErrCorrupt, err)
	}
	fr := &FileReader{dec: json.NewDecoder(gz), sum: sha256.New()}
	if err := fr.dec.Decode(&fr.Header); err != nil {
		return nil, fmt.Errorf("%w: reading the header: %v", ErrCorrupt, err)
	}
	if fr.Header.Format != FileFormat {
		return nil, fmt.Errorf("not a cellfed backup file (format %q, want %q)", fr.Header.Format, FileFormat)
	}
	if fr.Header.Version != FileVersion {
		return nil, fmt.Errorf("backup file version %d is not supported by this cellfed-apiserver (it reads version %d)", fr.Header.Version, FileVersion)
	}
	return fr, nil
}

// Next returns the next row, or io.EOF after the trailer, having checked
// the row count and hash.
func (r *FileReader) Next() (Row, error) {
	if r.done {
		return Row{}, io.EOF
	}
	var raw json.RawMessage
	if err := r.dec.Decode(&raw); err != nil {
		return Row{}, fmt.Errorf("%w: after %d rows: %v", ErrCorrupt, r.rows, err)
	}
	var t Trailer
	if err := json.Unmarshal(raw, &t); err == nil && t.End {
		r.done = true
		if got := hex.EncodeToString(r.sum.Sum(nil)); t.Rows != r.rows || t.Hash != got || t.Rows != r.Header.Rows {
			return Row{}, fmt.Errorf("%w: the trailer says %d rows (header %d), read %d; checksums %s / %s", ErrCorrupt, t.Rows, r.Header.Rows, r.rows, t.Hash, got)
		}
		return Row{}, io.EOF
	}
	var row Row
	if err := json.Unmarshal(raw, &row); err != nil {
		return Row{}, fmt.Errorf("%w: row %d: %v", ErrCorrupt, r.rows+1, err)
	}
	h := RowHash(row)
	r.sum.Write(h[:])
	r.rows++
	return row, nil
}
