"""curl and wget: the network is their purpose; files are not.

An allow rule naming ``curl`` admits fetching a URL to standard output. What
it writes (``-o``, ``-O``, ``-D``, ``-c``, ``--trace``, ``--libcurl``), what it
reads and may send (``-d @FILE``, ``-F name=@FILE``, ``-T FILE``, ``file://``
URLs, ``-K`` configuration, ``--netrc``), and the programs it loads
(``--engine``) are classed as such. wget writes the file it fetches (named by
the URL); that write is its purpose, and the sensitive-path list still judges
the name.
"""

from __future__ import annotations

import posixpath
from dataclasses import replace
from urllib.parse import urlsplit

from signoff.shell.commands.models import Kind, Model, Opt, Part, State, model

R, W, X, N, I, U = (Kind.READ, Kind.WRITE, Kind.EXEC, Kind.NETWORK, Kind.INERT,  # noqa: E741
                    Kind.UNKNOWN)


def _urls(state: State, *, save: bool) -> None:
    for n, index in enumerate(list(state.operands)):
        word = state.parts[index].word
        scheme = word.split(":", 1)[0].lower() if "://" in word else ""
        if scheme == "file":
            state.set_operand(n, R, "a file:// URL reads a local file")
            state.parts[index] = _with_value(state.parts[index], urlsplit(word).path or "/")
        else:
            state.set_operand(n, N, "the URL it fetches", declared=True)
            if save:
                path = urlsplit(word if scheme else "http://" + word).path
                name = posixpath.basename(path) or "index.html"
                state.parts.append(Part(kind=W, word=word, index=state.parts[index].index,
                                        value=posixpath.join(state.modes.get("prefix", ""),
                                                             name),
                                        why="the file it saves"))


def _with_value(part: Part, value: str) -> Part:
    return replace(part, value=value)


def _data_files(state: State) -> None:
    """``-d @FILE``, ``-F name=@FILE``/``<FILE``, ``-H @FILE``: the value names a file
    read and sent."""
    for i, part in enumerate(list(state.parts)):
        if part.option in ("-d", "--data", "--data-binary", "--data-urlencode", "--json",
                           "-F", "--form", "-b", "--cookie", "-w", "--write-out", "-H",
                           "--header", "--proxy-header") \
                and part.value is not None:
            value = part.value
            name = None
            if part.option in ("-H", "--header", "--proxy-header"):
                name = value[1:] if value.startswith("@") else None  # -H @FILE: its lines
            elif "@" in value and part.option not in ("-b", "--cookie"):
                name = value.split("@", 1)[1].split(";", 1)[0]
            elif part.option in ("-F", "--form") and "=<" in value:
                name = value.split("=<", 1)[1].split(";", 1)[0]
            elif part.option in ("-b", "--cookie") and "=" not in value:
                name = value
            if name and name != "-":
                state.parts[i] = Part(kind=R, word=part.word, index=part.index,
                                      option=part.option, value=name, literal=part.literal,
                                      why="reads FILE")
                if part.option not in ("-b", "--cookie", "-w", "--write-out"):
                    state.parts.append(Part(kind=N, word=part.word, index=part.index,
                                            option=part.option,
                                            why="sends a local file to another machine"))


def _curl_finish(state: State) -> None:
    _data_files(state)
    _urls(state, save=False)
    if "remote_name" in state.modes:
        state.parts.append(Part(kind=W, word="-O", index=0, value=None, literal=False,
                                why="writes a file named by the URL"))


_VALUE_OPTS = (
    "url= request= header= user-agent= referer= user= max-time= connect-timeout= retry= "
    "retry-delay= retry-max-time= proxy= proxy-user= noproxy= resolve= connect-to= "
    "interface= limit-rate= max-filesize= range= continue-at= write-out= cookie= "
    "data= data-binary= data-raw= data-urlencode= data-ascii= json= form= form-string= "
    "oauth2-bearer= aws-sigv4= cert-type= key-type= ciphers= tls-max= "
    "dns-servers= expect100-timeout= happy-eyeballs-timeout-ms= keepalive-time= "
    "max-redirs= preproxy= proxy-header= request-target= service-name= socks4= socks4a= "
    "socks5= socks5-hostname= speed-limit= speed-time= telnet-option= time-cond= "
    "tlsuser= tlspassword= tlsauthtype= variable= ")
_FLAG_OPTS = (
    "silent show-error fail fail-with-body location location-trusted insecure verbose "
    "include head get compressed http1.0 http1.1 http2 http2-prior-knowledge http3 ipv4 "
    "ipv6 no-buffer no-keepalive no-progress-meter progress-bar globoff path-as-is "
    "remote-name-all remote-header-name create-dirs ssl ssl-reqd tlsv1.2 tlsv1.3 raw "
    "tcp-nodelay fail-early no-sessionid anyauth basic digest ntlm negotiate netrc-optional "
    "post301 post302 post303 proto-default= proto= proto-redir= junk-session-cookies "
    "styled-output disable-epsv list-only append crlf use-ascii help version manual "
    "parallel parallel-immediate parallel-max= retry-all-errors retry-connrefused "
    "skip-existing suppress-connect-headers trace-time xattr disable next ")
_CURL_SHORT = ("#0123456:aA:b:Bc:C:d:D:e:E:fF:gGhH:iIjJkK:lLm:MnNo:OpP:qQ:r:RsStT:u:U:vVw:x:X:Y:y:"
               "z:Z")

CURL = model(
    "curl", _CURL_SHORT, _VALUE_OPTS + _FLAG_OPTS + "output= output-dir= remote-name "
    "dump-header= cookie-jar= trace= trace-ascii= stderr= libcurl= etag-save= "
    "etag-compare= hsts= alt-svc= config= upload-file= engine= cert= key= cacert= capath= "
    "crlfile= pinnedpubkey= netrc netrc-file= unix-socket= abstract-unix-socket= "
    "proxy-cacert= proxy-capath= proxy-cert= proxy-key= random-file= egd-file= "
    "ssl-engine= doh-url= ftp-port= quote=",
    kinds={"o": (W, "writes the response to FILE"), "output": (W, "writes the response"),
           "output-dir": (W, "writes into DIR"),
           "O": Opt(sets="remote_name"), "remote-name": Opt(sets="remote_name"),
           "D": (W, "writes headers to FILE"), "dump-header": (W, "writes headers to FILE"),
           "c": (W, "writes cookies to FILE"), "cookie-jar": (W, "writes cookies to FILE"),
           "trace": (W, "writes a trace"), "trace-ascii": (W, "writes a trace"),
           "stderr": (W, "writes errors to FILE"), "libcurl": (W, "writes C source"),
           "etag-save": (W, "writes the ETag"), "etag-compare": (R, "reads an ETag"),
           "hsts": (W, "reads and writes the HSTS cache"),
           "alt-svc": (W, "reads and writes the Alt-Svc cache"),
           "K": (U, "curl -K reads options from FILE (any option)"),
           "config": (U, "reads options from FILE (any option)"),
           "T": Opt(kind=N, file=True, why="uploads FILE to another machine"),
           "upload-file": Opt(kind=N, file=True, why="uploads FILE to another machine"),
           "engine": (X, "loads a crypto engine library"),
           "ssl-engine": (X, "loads a crypto engine"),
           "E": (R, "reads a certificate"), "cert": (R, "reads a certificate"),
           "key": (R, "reads a private key"), "cacert": (R, "reads CA certificates"),
           "capath": (R, "reads CA certificates"), "crlfile": (R, "reads a CRL"),
           "pinnedpubkey": (R, "reads a key"),
           "n": (N, "sends the credentials in ~/.netrc"),
           "netrc": (N, "sends the credentials in ~/.netrc"),
           "netrc-file": (N, "sends the credentials in FILE"),
           "unix-socket": (U, "talks to a local socket (a daemon's API)"),
           "abstract-unix-socket": (U, "talks to a local socket"),
           "proxy-cacert": (R, "reads"), "proxy-capath": (R, "reads"),
           "proxy-cert": (R, "reads"), "proxy-key": (R, "reads"),
           "random-file": (R, "reads"), "egd-file": (R, "reads"),
           "doh-url": (N, "resolves names over HTTPS"), "url": (N, "fetches URL"),
           "variable": (U, "reads variables (from files or the environment)"),
           "P": (N, "FTP active mode"), "ftp-port": (N, "FTP active mode"),
           "Q": (U, "sends raw FTP commands"), "quote": (U, "sends raw FTP commands")},
    operand=N, finish=_curl_finish)


def _wget_finish(state: State) -> None:
    saves = not any(m in state.modes for m in ("document", "spider"))
    _urls(state, save=saves)
    if "recursive" in state.modes:
        state.parts.append(Part(kind=W, word="-r", index=0, value=None, literal=False,
                                why="wget -r writes every file it fetches"))


WGET = model(
    "wget", "Vhbe:o:a:dqvnNi:FB:t:O:ncT:w:Q:P:rl:kKEpHD:I:X:AR:SU:x", "version help background "
    "execute= output-file= append-output= debug quiet verbose no-verbose report-speed= "
    "input-file= force-html base= config= no-config rejected-log= tries= retry-connrefused "
    "retry-on-http-error= output-document= no-clobber no-netrc continue start-pos= "
    "progress= show-progress timestamping no-if-modified-since no-use-server-timestamps "
    "server-response spider timeout= dns-timeout= connect-timeout= read-timeout= wait= "
    "waitretry= random-wait no-proxy quota= bind-address= limit-rate= no-dns-cache "
    "restrict-file-names= inet4-only inet6-only prefer-family= user= password= ask-password "
    "use-askpass= no-iri local-encoding= remote-encoding= unlink xattr no-directories "
    "force-directories no-host-directories protocol-directories cut-dirs= "
    "directory-prefix= default-page= adjust-extension http-user= http-password= "
    "no-http-keep-alive no-cache no-cookies load-cookies= save-cookies= keep-session-cookies "
    "ignore-length header= compression= max-redirect= proxy-user= proxy-password= referer= "
    "save-headers user-agent= post-data= post-file= method= body-data= body-file= "
    "content-disposition content-on-error trust-server-names auth-no-challenge "
    "secure-protocol= https-only no-check-certificate certificate= certificate-type= "
    "private-key= private-key-type= ca-certificate= ca-directory= crl-file= pinnedpubkey= "
    "random-file= egd-file= hsts-file= no-hsts warc-file= recursive level= delete-after "
    "convert-links backup-converted mirror page-requisites strict-comments accept= reject= "
    "accept-regex= reject-regex= regex-type= domains= exclude-domains= follow-ftp "
    "follow-tags= ignore-tags= ignore-case span-hosts relative include-directories= "
    "exclude-directories= no-parent",
    kinds={"e": (U, "wget -e runs a wgetrc command (which can run programs)"),
           "execute": (U, "runs a wgetrc command"), "config": (U, "reads a wgetrc"),
           "o": (W, "writes its log to FILE"), "output-file": (W, "writes its log"),
           "a": (W, "appends its log to FILE"), "append-output": (W, "appends its log"),
           "i": (R, "reads URLs from FILE"), "input-file": (R, "reads URLs from FILE"),
           "O": Opt(kind=W, sets="document", why="writes the download to FILE"),
           "output-document": Opt(kind=W, sets="document", why="writes the download"),
           "P": Opt(kind=W, sets="prefix", why="saves into DIR"),
           "directory-prefix": Opt(kind=W, sets="prefix", why="saves into DIR"),
           "spider": Opt(sets="spider"), "r": Opt(sets="recursive"),
           "recursive": Opt(sets="recursive"), "mirror": Opt(sets="recursive"),
           "post-file": (R, "sends FILE"), "body-file": (R, "sends FILE"),
           "load-cookies": (R, "reads cookies"), "save-cookies": (W, "writes cookies"),
           "use-askpass": (X, "runs a password program"),
           "rejected-log": (W, "writes a log"), "warc-file": (W, "writes WARC files"),
           "hsts-file": (W, "writes the HSTS cache"),
           "certificate": (R, "reads"), "private-key": (R, "reads"),
           "ca-certificate": (R, "reads"), "ca-directory": (R, "reads"),
           "crl-file": (R, "reads"), "random-file": (R, "reads"), "egd-file": (R, "reads"),
           "base": (N, "a base URL")},
    operand=N, finish=_wget_finish)

MODELS: list[Model] = [CURL, WGET]


def _remote_operands(state: State) -> None:
    """scp/rsync operands: ``host:path`` is another machine; the last operand is written."""
    for n, index in enumerate(list(state.operands)):
        word = state.parts[index].word
        remote = ":" in word.split("/", 1)[0] and not word.startswith(("/", "."))
        if remote:
            state.set_operand(n, N, "a path on another machine")
        elif n == len(state.operands) - 1 and n > 0:
            state.set_operand(n, W, "the local target it writes", declared=True)
    state.copies_trees("-r", "-a", "--recursive", "--archive")


def _socat_finish(state: State) -> None:
    for n, index in enumerate(list(state.operands)):
        address = state.parts[index].word.lower()
        head = address.split(":", 1)[0].split(",", 1)[0]
        if head in ("exec", "system"):
            state.set_operand(n, X, "a socat EXEC/SYSTEM address runs a program")
        elif "listen" in head:
            state.concern("listener", "socat listens for connections")
            state.set_operand(n, N, "listens for connections")
        elif head in ("-", "stdio", "stdin", "stdout", "stderr"):
            state.set_operand(n, I, "standard input and output")
        else:
            state.set_operand(n, N, "a socat address")


_SSH_OPTION = (X, "an ssh option (ProxyCommand, LocalCommand) can run a program")
MODELS.extend([
    model("scp", "346ABCOpqRrTvc:D:F:i:J:l:o:P:S:X:", operand=R, finish=_remote_operands,
          kinds={"o": _SSH_OPTION, "S": (X, "runs PROGRAM instead of ssh"),
                 "D": (X, "runs an sftp server program"), "F": (U, "reads an ssh config"),
                 "J": (N, "connects through another host"), "i": (R, "reads a key")}),
    model("rsync", "avzrlptgoDhPnqcHAXSuWxRbe:f:", "archive verbose compress recursive "
          "dry-run delete progress partial human-readable checksum exclude= include= "
          "rsh= rsync-path= filter= exclude-from= include-from= files-from= log-file= "
          "backup-dir= temp-dir= password-file= help version", operand=R,
          finish=_remote_operands,
          kinds={"e": (X, "runs PROGRAM as the remote shell"), "rsh": (X, "remote shell"),
                 "rsync-path": (X, "runs PROGRAM on the remote side"),
                 "exclude-from": (R, "reads"), "include-from": (R, "reads"),
                 "files-from": (U, "names files in FILE"), "log-file": (W, "writes a log"),
                 "backup-dir": (W, "writes backups"), "temp-dir": (W, "writes"),
                 "password-file": (R, "reads a password"), "f": (U, "a filter rule"),
                 "filter": (U, "a filter rule")}),
    model("socat", "hVvdDxbt:T:uUgL:W:46l:", operand=N, finish=_socat_finish,
          kinds={"l": (U, "socat -l options (lf writes a log)"),
                 "L": (W, "writes a lock file"), "W": (W, "writes a lock file")}),
])
for _nc in ("nc", "ncat", "netcat"):
    MODELS.append(model(_nc, "46bCDdhklnrStUuvzc:e:g:G:i:I:m:M:O:o:P:p:q:s:T:V:w:W:X:x:",
                        operand=N, kinds={"e": (X, "nc -e runs a program"),
                                          "c": (X, "nc -c runs a shell command"),
                                          "l": Opt(kind=N, why="listens for connections"),
                                          "o": (W, "writes a hex dump")}))
