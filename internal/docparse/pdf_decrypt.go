package docparse

import (
	"bytes"
	"fmt"

	"github.com/ledongthuc/pdf"
	"github.com/pdfcpu/pdfcpu/pkg/api"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"
)

// Many PDFs are encrypted with an empty user password and an owner
// password that only restricts printing, copying or editing: any viewer
// opens them without asking. The reader (github.com/ledongthuc/pdf)
// decrypts RC4 and 128-bit AES, but not the 256-bit AES of Acrobat 9 and
// later (revisions 5 and 6, what "restrict editing" writes today), and it
// misreads the 40-bit RC4 of old print-only files (see shortRC4Key). For
// those, github.com/pdfcpu/pdfcpu — a maintained, pure-Go PDF processor
// (Apache-2.0) that implements every standard security handler and bounds
// what hostile input may make it allocate (model.ResourceLimits) — writes
// a decrypted copy with the empty user password, which the reader then
// parses as any other file. A file whose user password is not empty stays
// refused: nobody gave us its password.

func init() {
	// pdfcpu would otherwise create a configuration directory in the
	// user's home the first time it is used.
	model.ConfigPath = "disable"
}

// maxDecryptDecodeBytes bounds what one stream may decode to while
// pdfcpu reads the file: an object stream or a content stream is a few
// megabytes in real documents, and a compressed bomb must fail rather
// than take the server's memory.
const maxDecryptDecodeBytes = 64 << 20

// decryptOwnerOnly returns data decrypted with the empty user password,
// or an error when that password does not open it (or pdfcpu cannot read
// the file); a panic of pdfcpu is an error.
func decryptOwnerOnly(data []byte) (plain []byte, err error) {
	defer func() {
		if p := recover(); p != nil {
			plain, err = nil, fmt.Errorf("%v", p)
		}
	}()
	conf := model.NewDefaultConfiguration()
	conf.UserPW, conf.OwnerPW = "", ""
	conf.ValidationMode = model.ValidationRelaxed
	conf.Limits.MaxStreamBytes = int64(len(data))
	conf.Limits.MaxDecodeBytes = maxDecryptDecodeBytes
	conf.Limits.MaxImageBytes = maxDecryptDecodeBytes
	var out bytes.Buffer
	if err := api.Decrypt(bytes.NewReader(data), &out, conf); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// openOwnerOnly opens a PDF the reader refused as encrypted (refused, its
// error) or misreads (a 40-bit RC4 key): the copy decryptOwnerOnly makes
// when the user password is empty; refused otherwise.
func openOwnerOnly(data []byte, refused error) (*pdf.Reader, error) {
	plain, err := decryptOwnerOnly(data)
	if err != nil {
		return nil, refused
	}
	r, err := openPDF(plain)
	if err != nil {
		return nil, refused
	}
	return r, nil
}
