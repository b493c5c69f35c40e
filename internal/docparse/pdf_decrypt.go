package docparse

import (
	"bytes"
	"context"
	"fmt"

	"github.com/ledongthuc/pdf"
	"github.com/pdfcpu/pdfcpu/pkg/api"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"
)

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
func decryptOwnerOnly(ctx context.Context, data []byte) (plain []byte, err error) {
	defer func() {
		if p := recover(); p != nil {
			plain, err = nil, fmt.Errorf("%v", p)
		}
	}()
	conf := model.NewDefaultConfiguration()
	conf.Cmd = model.DECRYPT
	conf.UserPW, conf.OwnerPW = "", ""
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
