#!/usr/bin/env bash
# Builds the committed PDF/Office fixtures with Debian tools, so the tests
# read files from producers other than our own Go writer. Run it by hand
# after changing it (the tests never run it):
#   apt-get install groff ghostscript libreoffice-writer-nogui \
#       libreoffice-impress-nogui libreoffice-calc-nogui fonts-droid-fallback qpdf
#   bash internal/docparse/testdata/make-fixtures.sh
# Every fixture has a phrase on a known page (the tests look for it).
set -euo pipefail
cd "$(dirname "$0")"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# groff (ms macros) → PDF through groff's own PDF driver (gropdf).
cat >"$work/manual.ms" <<'MS'
.TL
Harbor Crane Operations Manual
.NH
Introduction
.PP
This manual describes the daily operation of the harbor cranes.
.bp
.NH
Inspection
.PP
Inspect the hoist cable for broken strands before every shift.
.bp
.NH
Wind limits
.PP
Stop all lifting when the anemometer reads above fifteen metres per second.
.bp
.NH
Maintenance
.PP
Grease the slewing ring every two hundred operating hours.
MS
groff -ms -Tpdf "$work/manual.ms" >groff-manual.pdf

# Hand-written PostScript → PDF through ghostscript's ps2pdf.
cat >"$work/orchard.ps" <<'PS'
%!PS
/Times-Roman findfont 14 scalefont setfont
72 700 moveto (Orchard Care Guide, page one: planting young apple trees.) show
showpage
72 700 moveto (Page two: water the saplings twice a week in summer.) show
showpage
72 700 moveto (Page three: prune the pear branches in late winter before buds open.) show
72 680 moveto (A second line on page three about codling moth traps.) show
showpage
PS
ps2pdf "$work/orchard.ps" ghostscript-orchard.pdf

# Image-only PDF (what a scanner produces): a page with a picture and no text layer.
cat >"$work/scan.ps" <<'PS'
%!PS
72 500 translate 300 200 scale
8 8 8 [8 0 0 8 0 0] {<ff00ff00ff00ff0000ff00ff00ff00ffff00ff00ff00ff0000ff00ff00ff00ff>} image
showpage
PS
ps2pdf "$work/scan.ps" scanned.pdf

# LibreOffice: Word, PowerPoint, Excel and a Chinese PDF.
if command -v soffice >/dev/null; then
  cat >"$work/handbook.html" <<'HTML'
<html><head><meta charset="utf-8"><title>Volunteer Handbook</title></head><body>
<h1>Volunteer Handbook</h1>
<p>Welcome to the community garden volunteers.</p>
<h2>Safety</h2>
<p>Always wear gloves when handling the compost heap.</p>
<h3>Tools</h3>
<p>Return the wheelbarrows to the blue shed after use.</p>
<table border="1"><tr><td>Tool</td><td>Shed</td></tr><tr><td>Rake</td><td>Green shed</td></tr></table>
<h2>Schedule</h2>
<p>Watering rota starts at seven in the morning.</p>
</body></html>
HTML
  soffice --headless --convert-to 'docx:MS Word 2007 XML' --outdir "$work" "$work/handbook.html" >/dev/null
  cp "$work/handbook.docx" libreoffice-handbook.docx

  cat >"$work/zh.html" <<'HTML'
<html><head><meta charset="utf-8"><style>body{font-family:"Droid Sans Fallback"}</style></head><body>
<p>第一页：茶园管理手册。</p>
<p style="page-break-before:always">第二页：春季采摘嫩芽。</p>
<p style="page-break-before:always">第三页：夏季要注意防治茶尺蠖虫害。</p>
</body></html>
HTML
  soffice --headless --convert-to pdf:writer_pdf_Export --outdir "$work" "$work/zh.html" >/dev/null
  cp "$work/zh.pdf" libreoffice-chinese.pdf

  frame() { # class, y, text
    printf '<draw:frame presentation:class="%s" svg:x="2cm" svg:y="%s" svg:width="22cm" svg:height="3cm"><draw:text-box><text:p>%s</text:p></draw:text-box></draw:frame>' "$1" "$2" "$3"
  }
  {
    printf '<?xml version="1.0" encoding="UTF-8"?>\n<office:document xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:draw="urn:oasis:names:tc:opendocument:xmlns:drawing:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" xmlns:presentation="urn:oasis:names:tc:opendocument:xmlns:presentation:1.0" xmlns:svg="urn:oasis:names:tc:opendocument:xmlns:svg-compatible:1.0" office:version="1.2" office:mimetype="application/vnd.oasis.opendocument.presentation"><office:body><office:presentation>'
    printf '<draw:page draw:name="s1">%s%s</draw:page>' "$(frame title 1cm 'Ferry Timetable Changes')" "$(frame outline 5cm 'The winter schedule starts in November.')"
    printf '<draw:page draw:name="s2">%s%s</draw:page>' "$(frame title 1cm 'Night Crossings')" "$(frame outline 5cm 'The last boat to the island leaves at eleven thirty.')"
    printf '<draw:page draw:name="s3">%s%s</draw:page>' "$(frame title 1cm 'Bicycles on Board')" "$(frame outline 5cm 'Bicycles travel free on the lower car deck.')"
    printf '</office:presentation></office:body></office:document>\n'
  } >"$work/ferry.fodp"
  soffice --headless --convert-to 'pptx:Impress MS PowerPoint 2007 XML' --outdir "$work" "$work/ferry.fodp" >/dev/null
  cp "$work/ferry.pptx" libreoffice-ferry.pptx

  printf 'Station,City,Opened\nNorth Gate,Lisbon,1998\nRiver Quay,Porto,2004\n' >"$work/stations.csv"
  soffice --headless --convert-to xlsx --outdir "$work" "$work/stations.csv" >/dev/null
  cp "$work/stations.xlsx" libreoffice-stations.xlsx
fi
# qpdf: 256-bit AES (revision 6, what Acrobat's "restrict editing" writes),
# once with an empty user password (any viewer opens it; the owner
# password only restricts printing, editing and copying) and once with a
# user password (nobody gave us it: refused).
qpdf --encrypt "" "tea-owner" 256 --print=none --modify=none --extract=n -- \
  libreoffice-chinese.pdf qpdf-aes256-owner-only.pdf
qpdf --encrypt "tea-user" "tea-owner" 256 -- groff-manual.pdf qpdf-aes256-user-password.pdf
# 128-bit AES (revision 4), an empty user password: the PDF reader's own.
qpdf --encrypt "" "o" 128 --use-aes=y -- ghostscript-orchard.pdf qpdf-aes128-owner-only.pdf
# 256-bit AES, an empty user password, and XMP metadata that inflates to
# 200 MiB of zeros (a compressed bomb in a stream a reader has no need to
# decode), around one page of text.
python3 - "$work/bomb.pdf" <<'PY'
import sys, zlib
bomb = zlib.compress(b"\0" * (200 << 20), 9)
text = b"BT /F1 18 Tf 72 720 Td (The lighthouse metadata page.) Tj ET"
objs = [
    b"<< /Type /Catalog /Pages 2 0 R /Metadata 6 0 R >>",
    b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
    b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 4 0 R >> >> /Contents 5 0 R >>",
    b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    b"<< /Length %d >>\nstream\n" % len(text) + text + b"\nendstream",
    b"<< /Type /Metadata /Subtype /XML /Filter /FlateDecode /Length %d >>\nstream\n" % len(bomb) + bomb + b"\nendstream",
]
out, offsets = bytearray(b"%PDF-1.7\n"), []
for i, o in enumerate(objs, 1):
    offsets.append(len(out))
    out += b"%d 0 obj\n" % i + o + b"\nendobj\n"
xref = len(out)
out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objs) + 1)
out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objs) + 1, xref)
open(sys.argv[1], "wb").write(out)
PY
qpdf --encrypt "" "o" 256 -- "$work/bomb.pdf" qpdf-aes256-metadata-bomb.pdf

ls -l ./*.pdf ./*.docx ./*.pptx ./*.xlsx 2>/dev/null
