
using namespace System.Management.Automation
using namespace System.Management.Automation.Language

Register-ArgumentCompleter -Native -CommandName 'retry-http' -ScriptBlock {
    param($wordToComplete, $commandAst, $cursorPosition)

    $commandElements = $commandAst.CommandElements
    $command = @(
        'retry-http'
        for ($i = 1; $i -lt $commandElements.Count; $i++) {
            $element = $commandElements[$i]
            if ($element -isnot [StringConstantExpressionAst] -or
                $element.StringConstantType -ne [StringConstantType]::BareWord -or
                $element.Value.StartsWith('-') -or
                $element.Value -eq $wordToComplete) {
                break
        }
        $element.Value
    }) -join ';'

    $completions = @(switch ($command) {
        'retry-http' {
            [CompletionResult]::new('-X', '-X ', [CompletionResultType]::ParameterName, 'The request method (curl''s name)')
            [CompletionResult]::new('--request', '--request', [CompletionResultType]::ParameterName, 'The request method (curl''s name)')
            [CompletionResult]::new('-H', '-H ', [CompletionResultType]::ParameterName, 'Add a request header, ''Name: value'' (repeatable)')
            [CompletionResult]::new('--header', '--header', [CompletionResultType]::ParameterName, 'Add a request header, ''Name: value'' (repeatable)')
            [CompletionResult]::new('-d', '-d', [CompletionResultType]::ParameterName, 'Request body: text, @FILE or @- (stdin); repeats join with &')
            [CompletionResult]::new('--data', '--data', [CompletionResultType]::ParameterName, 'Request body: text, @FILE or @- (stdin); repeats join with &')
            [CompletionResult]::new('--data-binary', '--data-binary', [CompletionResultType]::ParameterName, 'Request body sent byte for byte: text, @FILE, or @- for stdin')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'JSON request body: text, @FILE or @-')
            [CompletionResult]::new('-u', '-u', [CompletionResultType]::ParameterName, 'Basic authentication, USER:PASSWORD')
            [CompletionResult]::new('--user', '--user', [CompletionResultType]::ParameterName, 'Basic authentication, USER:PASSWORD')
            [CompletionResult]::new('-A', '-A ', [CompletionResultType]::ParameterName, 'The User-Agent header')
            [CompletionResult]::new('--user-agent', '--user-agent', [CompletionResultType]::ParameterName, 'The User-Agent header')
            [CompletionResult]::new('--max-redirs', '--max-redirs', [CompletionResultType]::ParameterName, 'The most redirects followed with -L')
            [CompletionResult]::new('-x', '-x', [CompletionResultType]::ParameterName, 'Use this proxy (http://HOST:PORT); overrides HTTPS_PROXY, http_proxy and ALL_PROXY')
            [CompletionResult]::new('--proxy', '--proxy', [CompletionResultType]::ParameterName, 'Use this proxy (http://HOST:PORT); overrides HTTPS_PROXY, http_proxy and ALL_PROXY')
            [CompletionResult]::new('--noproxy', '--noproxy', [CompletionResultType]::ParameterName, 'Hosts reached without the proxy, comma-separated (''*'' for all); overrides NO_PROXY')
            [CompletionResult]::new('--cacert', '--cacert', [CompletionResultType]::ParameterName, 'Trust the certificates in this PEM file, besides the system''s store')
            [CompletionResult]::new('--data-urlencode', '--data-urlencode', [CompletionResultType]::ParameterName, 'Body part URL-encoded as curl does (repeatable; joined with & with -d in order): CONTENT or =CONTENT encodes it all, NAME=CONTENT keeps NAME and encodes CONTENT, @FILE and NAME@FILE encode a file''s bytes (@- for stdin). Spaces become +')
            [CompletionResult]::new('-F', '-F ', [CompletionResultType]::ParameterName, 'A multipart/form-data field (repeatable; POST by default): NAME=VALUE, NAME=@FILE (a file upload, with its file name), NAME=<FILE (a field read from a file), @- and <- for stdin; ;type=MIME and ;filename=NAME after the value; "..." quotes a value holding ; or ,. Not with another body flag, -G or -I')
            [CompletionResult]::new('--form', '--form', [CompletionResultType]::ParameterName, 'A multipart/form-data field (repeatable; POST by default): NAME=VALUE, NAME=@FILE (a file upload, with its file name), NAME=<FILE (a field read from a file), @- and <- for stdin; ;type=MIME and ;filename=NAME after the value; "..." quotes a value holding ; or ,. Not with another body flag, -G or -I')
            [CompletionResult]::new('-K', '-K ', [CompletionResultType]::ParameterName, 'Read more flags from FILE (curl''s syntax): one per line, with or without the leading --, `name = value`, `name: value` or `name value`, "..." quoting with \ escapes, # comments; `url = URL` gives the URL. Its flags count as if typed at the place of -K. No default file is read (not ~/.curlrc); at most 1 MiB; no -K inside')
            [CompletionResult]::new('--config', '--config', [CompletionResultType]::ParameterName, 'Read more flags from FILE (curl''s syntax): one per line, with or without the leading --, `name = value`, `name: value` or `name value`, "..." quoting with \ escapes, # comments; `url = URL` gives the URL. Its flags count as if typed at the place of -K. No default file is read (not ~/.curlrc); at most 1 MiB; no -K inside')
            [CompletionResult]::new('--attempts', '--attempts', [CompletionResultType]::ParameterName, 'Attempts, the first included [default: 6]')
            [CompletionResult]::new('--base', '--base', [CompletionResultType]::ParameterName, 'Backoff base: the first retry''s ceiling (at least 1ms). Retry n''s ceiling is min(cap, base * 2^n)')
            [CompletionResult]::new('--cap', '--cap', [CompletionResultType]::ParameterName, 'The largest backoff ceiling')
            [CompletionResult]::new('--jitter', '--jitter', [CompletionResultType]::ParameterName, 'full | equal | decorrelated | none | +DURATION (additive: ceiling + uniform(0, DURATION))')
            [CompletionResult]::new('--deadline', '--deadline', [CompletionResultType]::ParameterName, 'The whole run ends by then, waits included')
            [CompletionResult]::new('--retry-on', '--retry-on', [CompletionResultType]::ParameterName, 'Status codes retried: codes, ranges (500-599), classes (5xx), comma-separated; replaces the default')
            [CompletionResult]::new('--max-retry-after', '--max-retry-after', [CompletionResultType]::ParameterName, 'The longest Retry-After honoured; a longer hint is clamped to it (and logged)')
            [CompletionResult]::new('--retry-after-spread', '--retry-after-spread', [CompletionResultType]::ParameterName, 'Random spread added after a Retry-After wait, so clients do not return together (0: off)')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'Timeout of one attempt')
            [CompletionResult]::new('-m', '-m', [CompletionResultType]::ParameterName, 'curl''s name for --timeout, in plain seconds (fractions allowed: 2.5; 0: none)')
            [CompletionResult]::new('--max-time', '--max-time', [CompletionResultType]::ParameterName, 'curl''s name for --timeout, in plain seconds (fractions allowed: 2.5; 0: none)')
            [CompletionResult]::new('--connect-timeout', '--connect-timeout', [CompletionResultType]::ParameterName, 'Timeout for opening the connection: DNS and TCP (0: none of its own)')
            [CompletionResult]::new('--stall-timeout', '--stall-timeout', [CompletionResultType]::ParameterName, 'An attempt fails, retryably, when no byte arrives for this long (0: off)')
            [CompletionResult]::new('--seed', '--seed', [CompletionResultType]::ParameterName, 'Seed for the random draws, so a run can be replayed (-v shows the one used)')
            [CompletionResult]::new('--idempotency-key', '--idempotency-key', [CompletionResultType]::ParameterName, 'Send this Idempotency-Key on every attempt; allows replaying POST. auto: a new random UUID each run (it covers this run''s retries, not a re-run: derive a key from the job for that)')
            [CompletionResult]::new('--until-status', '--until-status', [CompletionResultType]::ParameterName, 'Ready when the status is in LIST (codes, ranges, classes as in --retry-on), even a 4xx or 5xx; any other answer is not ready yet, 404 included')
            [CompletionResult]::new('--until-body', '--until-body', [CompletionResultType]::ParameterName, 'Ready when the body matches REGEX (the regex crate''s syntax). Repeatable: all must hold')
            [CompletionResult]::new('--until-json', '--until-json', [CompletionResultType]::ParameterName, 'Ready when the JSON body has VALUE at the RFC 6901 POINTER: /status=green, /ready=true, /nodes/0/state="up". Repeatable')
            [CompletionResult]::new('--until-header', '--until-header', [CompletionResultType]::ParameterName, 'Ready when the response has header NAME with a value matching REGEX. Repeatable')
            [CompletionResult]::new('--state', '--state', [CompletionResultType]::ParameterName, 'Share a circuit breaker, a retry budget and Retry-After per target with other runs through a file or a Redis server (STORE: a file''s path, or redis://, rediss://, redis+unix://)')
            [CompletionResult]::new('--state-timeout', '--state-timeout', [CompletionResultType]::ParameterName, 'With --state: the most each store operation may take, connecting included, and at most half of what is left of --deadline')
            [CompletionResult]::new('--state-on-error', '--state-on-error', [CompletionResultType]::ParameterName, 'With --state: what a store that cannot be used means: open (warn once, go on without it) or closed (send nothing, exit 7)')
            [CompletionResult]::new('--state-cacert', '--state-cacert', [CompletionResultType]::ParameterName, 'With --state rediss://: the CA certificates (PEM) the server''s must chain to, instead of the system''s')
            [CompletionResult]::new('--breaker-threshold', '--breaker-threshold', [CompletionResultType]::ParameterName, 'With --state: consecutive failed runs (exit 4, 5, 6) that open the circuit')
            [CompletionResult]::new('--breaker-cooldown', '--breaker-cooldown', [CompletionResultType]::ParameterName, 'With --state: how long an open circuit refuses (exit 7) before one run probes')
            [CompletionResult]::new('--retry-budget', '--retry-budget', [CompletionResultType]::ParameterName, 'With --state: retries allowed, as a percentage of successful requests in the window (0% and above: over 100% allows more retries than successes)')
            [CompletionResult]::new('--budget-window', '--budget-window', [CompletionResultType]::ParameterName, 'With --state: the sliding window of the retry budget (at least 1s)')
            [CompletionResult]::new('--budget-floor', '--budget-floor', [CompletionResultType]::ParameterName, 'With --state: retries always allowed per window, so a quiet job can still retry')
            [CompletionResult]::new('--state-ttl', '--state-ttl', [CompletionResultType]::ParameterName, 'With --state: a target with no run for this long is forgotten, unless it still refuses runs (an open circuit in its cooldown, a probe''s lease, a shared Retry-After)')
            [CompletionResult]::new('-o', '-o', [CompletionResultType]::ParameterName, 'Write the body to FILE')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Write the body to FILE')
            [CompletionResult]::new('-D', '-D ', [CompletionResultType]::ParameterName, 'Write the final response''s status line and headers to FILE (''-'': stdout, before the body, as curl)')
            [CompletionResult]::new('--dump-header', '--dump-header', [CompletionResultType]::ParameterName, 'Write the final response''s status line and headers to FILE (''-'': stdout, before the body, as curl)')
            [CompletionResult]::new('--max-filesize', '--max-filesize', [CompletionResultType]::ParameterName, 'Fail (exit 6) when the body is larger than SIZE bytes (k, M, G suffixes)')
            [CompletionResult]::new('-w', '-w', [CompletionResultType]::ParameterName, 'After the run, print FORMAT on stdout (curl''s -w)')
            [CompletionResult]::new('--write-out', '--write-out', [CompletionResultType]::ParameterName, 'After the run, print FORMAT on stdout (curl''s -w)')
            [CompletionResult]::new('--log-format', '--log-format', [CompletionResultType]::ParameterName, 'Format of the stderr log')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'Colour on stderr (auto: on a terminal, honouring NO_COLOR and CLICOLOR_FORCE)')
            [CompletionResult]::new('--resolve', '--resolve', [CompletionResultType]::ParameterName, 'Use ADDR for HOST:PORT instead of looking it up (repeatable): HOST ''*'' matches any host; several addresses are tried in order; an IPv6 address may be written in [brackets]; a leading ''+'' is accepted (curl''s cache timeout; there is no cache across runs). TLS and the Host header keep the URL''s name')
            [CompletionResult]::new('--connect-to', '--connect-to', [CompletionResultType]::ParameterName, 'A request to HOST1:PORT1 connects to HOST2:PORT2 instead (repeatable, the first match wins); an empty HOST1 or PORT1 matches any, an empty HOST2 or PORT2 keeps the URL''s. TLS and the Host header keep the URL''s name')
            [CompletionResult]::new('--unix-socket', '--unix-socket', [CompletionResultType]::ParameterName, 'Send the request over this Unix socket (a local daemon, /var/run/docker.sock); the URL gives the Host header and the path. A socket absent or refusing is retried as a refused connection; no proxy is used')
            [CompletionResult]::new('-E', '-E ', [CompletionResultType]::ParameterName, 'Client certificate (mutual TLS): a PEM file with the certificate chain, and the private key too unless --key names it. '':PASSWORD'' is accepted only for a key that is not encrypted (an encrypted key is refused: decrypt it with openssl); ''\:'' escapes a colon of the file name')
            [CompletionResult]::new('--cert', '--cert', [CompletionResultType]::ParameterName, 'Client certificate (mutual TLS): a PEM file with the certificate chain, and the private key too unless --key names it. '':PASSWORD'' is accepted only for a key that is not encrypted (an encrypted key is refused: decrypt it with openssl); ''\:'' escapes a colon of the file name')
            [CompletionResult]::new('--key', '--key', [CompletionResultType]::ParameterName, 'The private key of --cert, a PEM file (PKCS#8, PKCS#1 or SEC1; not encrypted)')
            [CompletionResult]::new('--cert-type', '--cert-type', [CompletionResultType]::ParameterName, 'The format of --cert: only PEM (DER and P12 are refused, with the openssl command that converts them)')
            [CompletionResult]::new('--netrc-file', '--netrc-file', [CompletionResultType]::ParameterName, 'Like --netrc, with this file instead of ~/.netrc')
            [CompletionResult]::new('-Y', '-Y ', [CompletionResultType]::ParameterName, 'An attempt whose body arrives slower than BYTES per second, measured over spans of --speed-time (30 s by default), fails as a stall, retryably (k, M, G suffixes; 0: off)')
            [CompletionResult]::new('--speed-limit', '--speed-limit', [CompletionResultType]::ParameterName, 'An attempt whose body arrives slower than BYTES per second, measured over spans of --speed-time (30 s by default), fails as a stall, retryably (k, M, G suffixes; 0: off)')
            [CompletionResult]::new('-y', '-y', [CompletionResultType]::ParameterName, 'The span of --speed-limit, in seconds (fractions allowed; at least 1ms); given alone, the limit is 1 byte per second, as in curl')
            [CompletionResult]::new('--speed-time', '--speed-time', [CompletionResultType]::ParameterName, 'The span of --speed-limit, in seconds (fractions allowed; at least 1ms); given alone, the limit is 1 byte per second, as in curl')
            [CompletionResult]::new('-C', '-C ', [CompletionResultType]::ParameterName, 'Resume the -o or -O file from its size: only ''-'' is accepted (curl''s ''-C -'')')
            [CompletionResult]::new('--continue-at', '--continue-at', [CompletionResultType]::ParameterName, 'Resume the -o or -O file from its size: only ''-'' is accepted (curl''s ''-C -'')')
            [CompletionResult]::new('--etag-save', '--etag-save', [CompletionResultType]::ParameterName, 'After a successful run, write the response''s ETag to FILE (an empty file when it has none); a 304 leaves FILE as it was. Written by temporary file and rename')
            [CompletionResult]::new('--etag-compare', '--etag-compare', [CompletionResultType]::ParameterName, 'Send If-None-Match with the ETag in FILE (its first line, at most 8 KiB); a 304 Not Modified is then a success (exit 0) that leaves -o as it was. A missing or empty FILE sends no If-None-Match when --etag-save is given too (the first run), and is a usage error otherwise')
            [CompletionResult]::new('-z', '-z', [CompletionResultType]::ParameterName, 'Send If-Modified-Since DATE, or with a leading ''-'' If-Unmodified-Since; a name of an existing file gives its modification time')
            [CompletionResult]::new('--time-cond', '--time-cond', [CompletionResultType]::ParameterName, 'Send If-Modified-Since DATE, or with a leading ''-'' If-Unmodified-Since; a name of an existing file gives its modification time')
            [CompletionResult]::new('-b', '-b', [CompletionResultType]::ParameterName, 'Send cookies: ''NAME=VALUE; NAME2=VALUE2'' as given, or (no ''='') a Netscape cookie file, read once (at most 4 MiB), whose cookies are sent only where their domain and path match, ''secure'' ones only over https, expired ones never (repeatable)')
            [CompletionResult]::new('--cookie', '--cookie', [CompletionResultType]::ParameterName, 'Send cookies: ''NAME=VALUE; NAME2=VALUE2'' as given, or (no ''='') a Netscape cookie file, read once (at most 4 MiB), whose cookies are sent only where their domain and path match, ''secure'' ones only over https, expired ones never (repeatable)')
            [CompletionResult]::new('--url', '--url', [CompletionResultType]::ParameterName, 'The URL, as curl''s --url gives it, instead of the positional URL (one of the two, once: one request per run)')
            [CompletionResult]::new('-e', '-e', [CompletionResultType]::ParameterName, 'Send this Referer header (as curl''s -e; an empty URL sends none; -H Referer wins)')
            [CompletionResult]::new('--referer', '--referer', [CompletionResultType]::ParameterName, 'Send this Referer header (as curl''s -e; an empty URL sends none; -H Referer wins)')
            [CompletionResult]::new('--output-dir', '--output-dir', [CompletionResultType]::ParameterName, 'The folder a relative -o or -O file goes in (an absolute -o path is used as it is)')
            [CompletionResult]::new('-T', '-T ', [CompletionResultType]::ParameterName, 'Upload FILE (- for stdin) as the request body, byte for byte: PUT unless a method is given')
            [CompletionResult]::new('--upload-file', '--upload-file', [CompletionResultType]::ParameterName, 'Upload FILE (- for stdin) as the request body, byte for byte: PUT unless a method is given')
            [CompletionResult]::new('--data-raw', '--data-raw', [CompletionResultType]::ParameterName, 'Request body like -d, but a leading @ is sent as it is (no file is read); joins -d and --data-urlencode with & in command-line order')
            [CompletionResult]::new('--oauth2-bearer', '--oauth2-bearer', [CompletionResultType]::ParameterName, 'Send ''Authorization: Bearer TOKEN'' (masked in the log, like any Authorization; not sent to another origin under -L). -H Authorization wins; it replaces -u''s, as in curl')
            [CompletionResult]::new('--proto', '--proto', [CompletionResultType]::ParameterName, 'The URL schemes allowed, in curl''s syntax: a comma-separated list of names (http, https, all, or curl''s other protocols, which change nothing here), each after + (add, the default), - (remove) or = (only these), from all: ''=https'', ''-all,+https''')
            [CompletionResult]::new('--proto-redir', '--proto-redir', [CompletionResultType]::ParameterName, 'The schemes a redirect may go to under -L, in --proto''s syntax, from http,https: a redirect to another is not followed (exit 6, not retried). A redirect must also be allowed by --proto')
            [CompletionResult]::new('--tls-max', '--tls-max', [CompletionResultType]::ParameterName, 'The highest TLS version offered: 1.2, 1.3 or default (1.3). 1.0 and 1.1 are refused: TLS below 1.2 is not supported')
            [CompletionResult]::new('--keepalive-time', '--keepalive-time', [CompletionResultType]::ParameterName, 'Accepted, with no effect (see --tcp-nodelay)')
            [CompletionResult]::new('-L', '-L ', [CompletionResultType]::ParameterName, 'Follow redirects')
            [CompletionResult]::new('--location', '--location', [CompletionResultType]::ParameterName, 'Follow redirects')
            [CompletionResult]::new('-I', '-I ', [CompletionResultType]::ParameterName, 'Send a HEAD request and show the response''s status line and headers (with -G, the data goes in the URL)')
            [CompletionResult]::new('--head', '--head', [CompletionResultType]::ParameterName, 'Send a HEAD request and show the response''s status line and headers (with -G, the data goes in the URL)')
            [CompletionResult]::new('-k', '-k', [CompletionResultType]::ParameterName, 'Do not verify TLS certificates (says so on stderr)')
            [CompletionResult]::new('--insecure', '--insecure', [CompletionResultType]::ParameterName, 'Do not verify TLS certificates (says so on stderr)')
            [CompletionResult]::new('--compressed', '--compressed', [CompletionResultType]::ParameterName, 'Ask for a compressed response (Accept-Encoding: gzip) and decompress it')
            [CompletionResult]::new('-G', '-G ', [CompletionResultType]::ParameterName, 'Send the -d/--data-binary/--data-urlencode data in the URL''s query instead of a body (joined with &, after a ? or an & as the URL needs): GET, or HEAD with -I')
            [CompletionResult]::new('--get', '--get', [CompletionResultType]::ParameterName, 'Send the -d/--data-binary/--data-urlencode data in the URL''s query instead of a body (joined with &, after a ? or an & as the URL needs): GET, or HEAD with -I')
            [CompletionResult]::new('--retry-unsafe', '--retry-unsafe', [CompletionResultType]::ParameterName, 'Replay non-idempotent requests (POST, PATCH) after ambiguous failures, without a key')
            [CompletionResult]::new('--explain', '--explain', [CompletionResultType]::ParameterName, 'Print the policy and its schedule on stdout; send nothing')
            [CompletionResult]::new('-i', '-i', [CompletionResultType]::ParameterName, 'Include the final response''s status line and headers in the output')
            [CompletionResult]::new('--include', '--include', [CompletionResultType]::ParameterName, 'Include the final response''s status line and headers in the output')
            [CompletionResult]::new('--fail-with-body', '--fail-with-body', [CompletionResultType]::ParameterName, 'Also write the body of a final error response')
            [CompletionResult]::new('-N', '-N ', [CompletionResultType]::ParameterName, 'Stream the body as it arrives; a failure after the first byte is then not retried')
            [CompletionResult]::new('--no-buffer', '--no-buffer', [CompletionResultType]::ParameterName, 'Stream the body as it arrives; a failure after the first byte is then not retried')
            [CompletionResult]::new('-s', '-s', [CompletionResultType]::ParameterName, 'Only the final error line on stderr')
            [CompletionResult]::new('--silent', '--silent', [CompletionResultType]::ParameterName, 'Only the final error line on stderr')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Add the headers and the seed to the log')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Add the headers and the seed to the log')
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'Take the login and password for the URL''s host from ~/.netrc (machine, default; an absent file is an error). Not used when the URL has a user, or -u or an Authorization header is given; not sent to another host after a redirect')
            [CompletionResult]::new('--netrc', '--netrc', [CompletionResultType]::ParameterName, 'Take the login and password for the URL''s host from ~/.netrc (machine, default; an absent file is an error). Not used when the URL has a user, or -u or an Authorization header is given; not sent to another host after a redirect')
            [CompletionResult]::new('--netrc-optional', '--netrc-optional', [CompletionResultType]::ParameterName, 'Like --netrc (or --netrc-file), but an absent file is fine')
            [CompletionResult]::new('-R', '-R ', [CompletionResultType]::ParameterName, 'Set the -o or -O file''s modification time from the response''s Last-Modified')
            [CompletionResult]::new('--remote-time', '--remote-time', [CompletionResultType]::ParameterName, 'Set the -o or -O file''s modification time from the response''s Last-Modified')
            [CompletionResult]::new('--http1.1', '--http1.1', [CompletionResultType]::ParameterName, 'Speak HTTP/1.1: accepted, it is what retry-http always speaks')
            [CompletionResult]::new('-4', '-4', [CompletionResultType]::ParameterName, 'Resolve host names to IPv4 addresses only (the last of -4 and -6 counts, as in curl)')
            [CompletionResult]::new('--ipv4', '--ipv4', [CompletionResultType]::ParameterName, 'Resolve host names to IPv4 addresses only (the last of -4 and -6 counts, as in curl)')
            [CompletionResult]::new('-6', '-6', [CompletionResultType]::ParameterName, 'Resolve host names to IPv6 addresses only (the last of -4 and -6 counts, as in curl)')
            [CompletionResult]::new('--ipv6', '--ipv6', [CompletionResultType]::ParameterName, 'Resolve host names to IPv6 addresses only (the last of -4 and -6 counts, as in curl)')
            [CompletionResult]::new('-O', '-O ', [CompletionResultType]::ParameterName, 'Write the body to a file named as the URL''s last path segment, in the current folder')
            [CompletionResult]::new('--remote-name', '--remote-name', [CompletionResultType]::ParameterName, 'Write the body to a file named as the URL''s last path segment, in the current folder')
            [CompletionResult]::new('--create-dirs', '--create-dirs', [CompletionResultType]::ParameterName, 'Create the missing folders of the -o/-O path (--output-dir included)')
            [CompletionResult]::new('-f', '-f', [CompletionResultType]::ParameterName, 'curl''s --fail, accepted: it is what retry-http always does')
            [CompletionResult]::new('--fail', '--fail', [CompletionResultType]::ParameterName, 'curl''s --fail, accepted: it is what retry-http always does')
            [CompletionResult]::new('-S', '-S ', [CompletionResultType]::ParameterName, 'curl''s --show-error, accepted: with -s, the final error line is always shown')
            [CompletionResult]::new('--show-error', '--show-error', [CompletionResultType]::ParameterName, 'curl''s --show-error, accepted: with -s, the final error line is always shown')
            [CompletionResult]::new('-g', '-g', [CompletionResultType]::ParameterName, 'Accepted: retry-http never expands {} and [] in a URL (curl''s globbing); they are sent percent-encoded')
            [CompletionResult]::new('--globoff', '--globoff', [CompletionResultType]::ParameterName, 'Accepted: retry-http never expands {} and [] in a URL (curl''s globbing); they are sent percent-encoded')
            [CompletionResult]::new('--fail-early', '--fail-early', [CompletionResultType]::ParameterName, 'Accepted: there is one URL per run, so the first failure is the run''s')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Accepted: no ~/.curlrc is read anyway (curl''s -q, first on its command line)')
            [CompletionResult]::new('--disable', '--disable', [CompletionResultType]::ParameterName, 'Accepted: no ~/.curlrc is read anyway (curl''s -q, first on its command line)')
            [CompletionResult]::new('--basic', '--basic', [CompletionResultType]::ParameterName, 'Accepted: -u sends Basic authentication, the only kind -u sends here')
            [CompletionResult]::new('-p', '-p', [CompletionResultType]::ParameterName, 'Accepted: every proxy is reached through a CONNECT tunnel already')
            [CompletionResult]::new('--proxytunnel', '--proxytunnel', [CompletionResultType]::ParameterName, 'Accepted: every proxy is reached through a CONNECT tunnel already')
            [CompletionResult]::new('--remove-on-error', '--remove-on-error', [CompletionResultType]::ParameterName, 'Accepted: a failed run never leaves a partial -o file')
            [CompletionResult]::new('--no-styled-output', '--no-styled-output', [CompletionResultType]::ParameterName, 'Accepted: retry-http does not style the headers it shows')
            [CompletionResult]::new('--tcp-nodelay', '--tcp-nodelay', [CompletionResultType]::ParameterName, 'Accepted, with no effect: the TCP settings are the system''s (each attempt opens its own connection, so keep-alive does not arise)')
            [CompletionResult]::new('--tcp-fastopen', '--tcp-fastopen', [CompletionResultType]::ParameterName, 'Accepted, with no effect (see --tcp-nodelay)')
            [CompletionResult]::new('--no-keepalive', '--no-keepalive', [CompletionResultType]::ParameterName, 'Accepted, with no effect (see --tcp-nodelay)')
            [CompletionResult]::new('-#', '-#', [CompletionResultType]::ParameterName, 'Accepted: the progress line is shown on a terminal anyway (one line, not curl''s bar or meter)')
            [CompletionResult]::new('--progress-bar', '--progress-bar', [CompletionResultType]::ParameterName, 'Accepted: the progress line is shown on a terminal anyway (one line, not curl''s bar or meter)')
            [CompletionResult]::new('--no-progress-meter', '--no-progress-meter', [CompletionResultType]::ParameterName, 'Hide the download progress line (as -s does), and nothing else')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('demo', 'demo', [CompletionResultType]::ParameterValue, 'Start a failing server on loopback and run the client against it, to show the log')
            [CompletionResult]::new('simulate', 'simulate', [CompletionResultType]::ParameterValue, 'Simulate a fleet of clients retrying against a recovering server (no network)')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'retry-http;demo' {
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'retry-http;simulate' {
            [CompletionResult]::new('--clients', '--clients', [CompletionResultType]::ParameterName, 'Clients, all sending their first request at t = 0')
            [CompletionResult]::new('--outage', '--outage', [CompletionResultType]::ParameterName, 'How long the server rejects every request')
            [CompletionResult]::new('--capacity', '--capacity', [CompletionResultType]::ParameterName, 'Requests served per window once the outage ends')
            [CompletionResult]::new('--window', '--window', [CompletionResultType]::ParameterName, 'The capacity window')
            [CompletionResult]::new('--attempts', '--attempts', [CompletionResultType]::ParameterName, 'Attempts per client, the first included (1 to 1000)')
            [CompletionResult]::new('--base', '--base', [CompletionResultType]::ParameterName, 'Backoff base (the pause of the fixed strategy)')
            [CompletionResult]::new('--cap', '--cap', [CompletionResultType]::ParameterName, 'Backoff cap')
            [CompletionResult]::new('--deadline', '--deadline', [CompletionResultType]::ParameterName, 'Each client''s deadline (none by default)')
            [CompletionResult]::new('--seed', '--seed', [CompletionResultType]::ParameterName, 'Seed of the first run; run i uses seed + i')
            [CompletionResult]::new('--runs', '--runs', [CompletionResultType]::ParameterName, 'Runs to average over (1 to 1000)')
            [CompletionResult]::new('--strategies', '--strategies', [CompletionResultType]::ParameterName, 'Strategies to compare, comma-separated: fixed, exponential, full, equal, decorrelated')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output format')
            [CompletionResult]::new('--plot', '--plot', [CompletionResultType]::ParameterName, 'Draw load over time per strategy against the capacity line, as SVG')
            [CompletionResult]::new('--search', '--search', [CompletionResultType]::ParameterName, 'Search the policy space (jitter x base x cap) and print the Pareto front of calls against time to the last success, as flags to paste')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'retry-http;help' {
            [CompletionResult]::new('demo', 'demo', [CompletionResultType]::ParameterValue, 'Start a failing server on loopback and run the client against it, to show the log')
            [CompletionResult]::new('simulate', 'simulate', [CompletionResultType]::ParameterValue, 'Simulate a fleet of clients retrying against a recovering server (no network)')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'retry-http;help;demo' {
            break
        }
        'retry-http;help;simulate' {
            break
        }
        'retry-http;help;help' {
            break
        }
    })

    $completions.Where{ $_.CompletionText -like "$wordToComplete*" } |
        Sort-Object -Property ListItemText
}
