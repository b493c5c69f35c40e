package docparse

import (
	"bytes"
	"context"
	"fmt"

	"github.com/ledongthuc/pdf"
	"github.com/pdfcpu/pdfcpu/pkg/api"
	"github.com/pdfcpu/pdfcpu/pkg/filter"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/types"
)

// This file is what pdfcpu does for the reader: it rewrites two kinds of
// file the reader cannot read as they are — owner-password-only
// encryption, below, and LZW-compressed streams (recodeLZW).
//
// Many PDFs are encrypted with an empty user password and an owner
// password that only restricts printing, copying or editing: any viewer
// opens them without asking. The reader (github.com/ledongthuc/pdf)
// decrypts RC4 and 128-bit AES, but not the 256-bit AES of Acrobat 9 and
// later (revisions 5 and 6, what "restrict editing" writes today), and it
// misreads the 40-bit RC4 of old print-only files (see shortRC4Key). For
// those, github.com/pdfcpu/pdfcpu — a maintained, pure-Go PDF processor
// (Apache-2.0) that implements every standard security handler and lets
// its caller bound what input may make it allocate (model.ResourceLimits)
// — writes a decrypted copy with the empty user password, which the reader
// then parses as any other file (decryptOwnerOnly says what pdfcpu does
// and how far it may go). A file whose user password is not empty stays
// refused: nobody gave us its password.

func init() {
	// pdfcpu would otherwise create a configuration directory in the
	// user's home the first time it is used.
	model.ConfigPath = "disable"
}

// Bounds on what pdfcpu may build from one file. Only the file's
// structure is read — its objects, and the object streams that hold some
// of them — then written back decrypted: nothing is validated, optimised
// or rendered (validation would decode the XMP metadata with pdfcpu's own
// 512 MiB limit, and optimisation compares every font with every other,
// minutes for a megabyte of crafted fonts). A real document has a few
// thousand to a few hundred thousand objects and object streams of a few
// megabytes; pdfcpu keeps some hundred bytes per object.
const (
	maxDecryptDecodeBytes = 64 << 20
	maxDecryptObjects     = 1 << 18
)

// decryptOwnerOnly returns data decrypted with the empty user password,
// or an error when that password does not open it, pdfcpu cannot read the
// file, or ctx ends; a panic of pdfcpu is an error.
func decryptOwnerOnly(ctx context.Context, data []byte) ([]byte, error) {
	return pdfcpuCopy(ctx, data, true)
}

// pdfcpuCopy is data read by pdfcpu and written back: decrypted with the
// empty user password when decrypt is set, and with every stream that is
// not an image and is compressed with the LZW filter recompressed with
// Flate (recodeLZW). An error when pdfcpu cannot read or write the file or
// ctx ends; a panic of pdfcpu is an error.
func pdfcpuCopy(ctx context.Context, data []byte, decrypt bool) (copied []byte, err error) {
	defer func() {
		if p := recover(); p != nil {
			copied, err = nil, fmt.Errorf("%v", p)
		}
	}()
	conf := model.NewDefaultConfiguration()
	if decrypt {
		conf.Cmd = model.DECRYPT
		conf.UserPW, conf.OwnerPW = "", ""
	}
	conf.ValidationMode = model.ValidationRelaxed
	conf.Optimize = false
	conf.Offline = true
	conf.Limits.MaxStreamBytes = int64(len(data))
	conf.Limits.MaxDecodeBytes = maxDecryptDecodeBytes
	conf.Limits.MaxImageBytes = maxDecryptDecodeBytes
	conf.Limits.MaxObjectCount = maxDecryptObjects
	conf.Limits.MaxObjectStreamCount = maxDecryptObjects
	conf.Limits.MaxXRefEntries = maxDecryptObjects
	read, err := pdfcpu.ReadWithContext(ctx, bytes.NewReader(data), conf)
	if err != nil {
		return nil, err
	}
	if err := recodeLZW(ctx, read.XRefTable); err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := api.WriteContext(read, &out); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// openOwnerOnly opens a PDF the reader refused as encrypted (refused, its
// error) or misreads (a 40-bit RC4 key): the copy decryptOwnerOnly makes
// when the user password is empty; refused otherwise, or ctx's cause when
// it ended meanwhile.
func openOwnerOnly(ctx context.Context, data []byte, refused error) (*pdf.Reader, error) {
	plain, err := decryptOwnerOnly(ctx, data)
	if err != nil {
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		return nil, refused
	}
	r, err := openPDF(plain)
	if err != nil {
		return nil, refused
	}
	return r, nil
}

// The reader reads streams compressed with Flate, ASCII85 and no filter;
// LZW, the compression of PDF 1.0 and 1.1 (before Flate, and still what
// some scanners and old typesetting systems write), it refuses. pdfcpu
// decodes it, with either code-width change (EarlyChange), so a file
// holding LZW streams is read from a copy pdfcpu writes with those
// streams recompressed with Flate. Images are left as they are: their
// bytes are no text, and decoding them would cost memory for nothing.

// lzwFilter is the filter's name in a stream's dictionary.
const lzwFilter = "LZWDecode"

// holdsLZW reports whether data may hold a stream compressed with LZW:
// its filter's name, which a stream's dictionary (never inside an object
// stream) holds in the clear, appears in it.
func holdsLZW(data []byte) bool { return bytes.Contains(data, []byte("/"+lzwFilter)) }

// withoutLZW opens the copy of data in which the streams compressed with
// LZW are compressed with Flate (pdfcpuCopy): an error when pdfcpu cannot
// make one, the reader cannot read it, or ctx ends.
func withoutLZW(ctx context.Context, data []byte) (*pdf.Reader, error) {
	recoded, err := pdfcpuCopy(ctx, data, false)
	if err != nil {
		return nil, err
	}
	return openPDF(recoded)
}

// Bounds on what recodeLZW decodes: a stream that would decode to more
// than maxLZWStreamBytes is left as it is (a page's content stream is
// rarely over a megabyte), and once maxLZWBytes are decoded in all, the
// rest are. LZW turns one 12-bit code into up to 4,096 bytes, so a small
// file could otherwise ask for gigabytes.
const (
	maxLZWStreamBytes = 16 << 20
	maxLZWBytes       = 64 << 20
)

// recodeLZW first turns every object kept in an object stream into the
// object itself (pdfcpu keeps them lazily and would write their text as
// read, with references it no longer follows: the copy would lose the
// fonts of most files since PDF 1.5). It then decodes each stream of
// table that is compressed with LZW and is not an image, and compresses
// it with Flate alone instead, within maxLZWStreamBytes each and
// maxLZWBytes in all (a stream that fails counts its limit: many streams
// each failing at the limit cost no more). A stream pdfcpu cannot decode
// (damaged, too large, or with a predictor it does not implement) is
// left as it is: the reader reports it when it is read, as it does any
// damaged stream.
func recodeLZW(ctx context.Context, table *model.XRefTable) error {
	for _, entry := range table.Table {
		if entry == nil || entry.Free {
			continue
		}
		if lazy, ok := entry.Object.(types.LazyObjectStreamObject); ok {
			obj, err := lazy.DecodedObject(ctx)
			if err != nil {
				return err
			}
			entry.Object = obj
		}
	}
	budget := maxLZWBytes
	for _, entry := range table.Table {
		if err := ctx.Err(); err != nil {
			return context.Cause(ctx)
		}
		if budget <= 0 {
			break
		}
		if entry == nil || entry.Free {
			continue
		}
		sd, ok := entry.Object.(types.StreamDict)
		if !ok || !usesLZW(sd) || sd.Subtype() != nil && *sd.Subtype() == "Image" {
			continue
		}
		// pdfcpu reads a limit of 0 as its default and one below 0 as
		// none: the budget is above 0 here.
		limit := min(budget, maxLZWStreamBytes)
		if err := sd.DecodeWithLimit(int64(limit)); err != nil {
			budget -= limit
			continue
		}
		budget -= len(sd.Content)
		sd.FilterPipeline = []types.PDFFilter{{Name: filter.Flate}}
		sd.Update("Filter", types.Name(filter.Flate))
		sd.Delete("DecodeParms")
		if err := sd.Encode(); err != nil {
			continue
		}
		sd.Content = nil // the Flate bytes are what is written
		entry.Object = sd
	}
	return nil
}

// usesLZW reports whether sd's filters include LZW.
func usesLZW(sd types.StreamDict) bool {
	for _, f := range sd.FilterPipeline {
		if f.Name == lzwFilter {
			return true
		}
	}
	return false
}
