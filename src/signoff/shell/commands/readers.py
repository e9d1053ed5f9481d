"""Commands that read files and print: coreutils readers, listing, and a few kin.

Their operands are files they read; every option is inert except the few
that name another file to read (``--files0-from``) or write (``tree -o``).
"""

from __future__ import annotations

from signoff.shell.commands.models import Kind, Model, model

R, W = Kind.READ, Kind.WRITE
# The files named in FILE are read too, and nothing here can see which they are.
_NAMES = (Kind.UNKNOWN, "reads the names of the files to process from FILE")

MODELS: list[Model] = [
    model("cat", "AbeEnstTuv", "show-all number-nonblank show-ends number squeeze-blank "
          "show-tabs show-nonprinting help version"),
    model("tac", "brs:", "before regex separator= help version"),
    model("head", "c:n:qvz", "bytes= lines= quiet silent verbose zero-terminated help version",
          digits=True),
    model("tail", "c:n:fFqvzs:", "bytes= lines= follow=? max-unchanged-stats= pid= quiet silent "
          "retry sleep-interval= verbose zero-terminated help version", digits=True),
    model("wc", "clmwL", "bytes chars lines max-line-length words files0-from= total= "
          "help version", kinds={"files0-from": _NAMES}),
    model("nl", "b:d:f:h:i:l:n:ps:v:w:", "body-numbering= section-delimiter= "
          "footer-numbering= header-numbering= line-increment= join-blank-lines= "
          "number-format= no-renumber number-separator= starting-line-number= number-width= "
          "help version"),
    model("ls", "aAbBcCdDfFgGhHiI:klLmnNopqQrRsStT:uUvw:xXZ1", "all almost-all author escape "
          "block-size= ignore-backups color=? directory dired classify=? file-type format= "
          "full-time group-directories-first no-group human-readable si "
          "dereference-command-line dereference-command-line-symlink-to-dir hide= hyperlink=? "
          "indicator-style= inode ignore= kibibytes dereference literal numeric-uid-gid "
          "hide-control-chars show-control-chars quote-name quoting-style= reverse recursive "
          "size sort= time= time-style= tabsize= width= context zero help version", stat=True),
    model("tree", "aAdfgiIlLnopPqQrstuvxX:CDFhHJNST:o:", "noreport charset= filelimit= "
          "timefmt= du prune matchdirs fromfile gitignore dirsfirst filesfirst sort= info "
          "ignore-case inodes device help version", kinds={
              "o": (W, "tree -o writes its listing to FILE"),
              "L": Kind.INERT, "I": Kind.INERT, "P": Kind.INERT, "H": Kind.INERT,
              "T": Kind.INERT, "X": Kind.INERT}, stat=True),
    model("stat", "Lfc:t", "dereference file-system format= printf= terse cached= help version",
          stat=True),
    model("du", "0abB:cd:DhHklLmsSt:xX:", "null all apparent-size block-size= bytes total "
          "dereference-args max-depth= files0-from= human-readable inodes dereference "
          "count-links separate-dirs si summarize threshold= time=? time-style= exclude-from= "
          "exclude= one-file-system help version",
          kinds={"files0-from": _NAMES, "X": (R, "reads exclusion patterns from FILE"),
                 "exclude-from": (R, "reads exclusion patterns from FILE")}, stat=True),
    model("df", "aB:hHiklPt:TvxX:", "all block-size= human-readable si inodes local no-sync "
          "output=? portability print-type sync total type= exclude-type= help version",
          operand=R),
    model("file", "bcC0deEf:F:hiIklLm:nNpP:rsSvzZ", "brief checking-printout compile "
          "exclude= exclude-quiet= extension files-from= separator= mime mime-type "
          "mime-encoding keep-going list dereference no-dereference magic-file= no-buffer "
          "no-pad preserve-date parameter= raw special-files uncompress uncompress-noreport "
          "print0 help version",
          kinds={"f": _NAMES, "files-from": _NAMES,
                 "m": (R, "reads magic from FILE"), "magic-file": (R, "reads magic from FILE"),
                 "C": (W, "file -C writes a compiled magic file"),
                 "compile": (W, "file --compile writes a compiled magic file")}),
    model("cut", "b:c:d:f:nsz", "bytes= characters= delimiter= fields= complement "
          "only-delimited output-delimiter= zero-terminated help version"),
    model("paste", "d:sz", "delimiters= serial zero-terminated help version"),
    model("comm", "123z", "check-order nocheck-order output-delimiter= total zero-terminated "
          "help version"),
    model("rev", "", "help version"),
    model("fold", "bsw:", "bytes spaces width= help version"),
    model("fmt", "cstuw:p:g:", "crown-margin prefix= split-only tagged-paragraph "
          "uniform-spacing width= goal= help version"),
    model("expand", "it:", "initial tabs= help version"),
    model("column", "c:s:tnxeo:N:R:T:H:O:E:d:J", "columns= separator= table output-separator= "
          "table-columns= table-right= table-truncate= table-hide= table-order= "
          "table-noextreme= table-noheadings fillrows json help version"),
    model("od", "A:bcdfhij:lN:ost:vw::x", "address-radix= skip-bytes= read-bytes= format= "
          "output-duplicates width=? traditional endian= strings=? help version"),
    model("hexdump", "bcCdoxe:f:n:s:vL", "help version",
          kinds={"f": (R, "reads a format from FILE")}),
    model("base64", "diw:", "decode ignore-garbage wrap= help version"),
    model("base32", "diw:", "decode ignore-garbage wrap= help version"),
    model("cmp", "bi:ln:sv", "print-bytes ignore-initial= verbose bytes= quiet silent "
          "help version"),
    model("strings", "adfn:t:e:oT:w", "all data print-file-name bytes= radix= encoding= "
          "target= include-all-whitespace output-separator= help version"),
    model("readlink", "efmnqsvz", "canonicalize canonicalize-existing canonicalize-missing "
          "no-newline quiet silent verbose zero help version", stat=True),
    model("realpath", "eLmPqsz", "canonicalize-existing canonicalize-missing logical physical "
          "quiet relative-to= relative-base= strip no-symlinks zero help version", stat=True),
]

for _name in ("md5sum", "sha1sum", "sha224sum", "sha256sum", "sha384sum", "sha512sum",
              "b2sum", "cksum", "sum"):
    MODELS.append(model(_name, "bctwza:l:", "binary check tag text zero ignore-missing quiet "
                        "status strict warn algorithm= length= base64 raw untagged help version"))
