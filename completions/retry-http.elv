
use builtin;
use str;

set edit:completion:arg-completer[retry-http] = {|@words|
    fn spaces {|n|
        builtin:repeat $n ' ' | str:join ''
    }
    fn cand {|text desc|
        edit:complex-candidate $text &display=$text' '(spaces (- 14 (wcswidth $text)))$desc
    }
    var command = 'retry-http'
    for word $words[1..-1] {
        if (str:has-prefix $word '-') {
            break
        }
        set command = $command';'$word
    }
    var completions = [
        &'retry-http'= {
            cand -X 'The request method (curl''s name); giving a positional METHOD too is an error'
            cand --request 'The request method (curl''s name); giving a positional METHOD too is an error'
            cand -H 'Add a request header, ''Name: value'' (repeatable); ''Name:'' removes it, ''Name;'' sends it empty; @FILE (@-: stdin) adds one per line, so secrets stay out of argv'
            cand --header 'Add a request header, ''Name: value'' (repeatable); ''Name:'' removes it, ''Name;'' sends it empty; @FILE (@-: stdin) adds one per line, so secrets stay out of argv'
            cand -d 'Request body: text, @FILE (CR and LF removed, as curl does) or @-; repeats join with &'
            cand --data 'Request body: text, @FILE (CR and LF removed, as curl does) or @-; repeats join with &'
            cand --data-binary 'Request body sent byte for byte: text, @FILE, or @- for stdin'
            cand --json 'JSON request body (text, @FILE or @-); sets Content-Type and Accept to application/json'
            cand -u 'Basic authentication, USER:PASSWORD'
            cand --user 'Basic authentication, USER:PASSWORD'
            cand -A 'The User-Agent header'
            cand --user-agent 'The User-Agent header'
            cand --max-redirs 'The most redirects followed with -L'
            cand -x 'Use this proxy (http://HOST:PORT); overrides HTTPS_PROXY, http_proxy and ALL_PROXY'
            cand --proxy 'Use this proxy (http://HOST:PORT); overrides HTTPS_PROXY, http_proxy and ALL_PROXY'
            cand --noproxy 'Hosts reached without the proxy, comma-separated (''*'' for all); overrides NO_PROXY'
            cand --cacert 'Trust the certificates in this PEM file, besides the system''s store'
            cand --data-urlencode 'Body part URL-encoded as curl does (repeatable; joined with & with -d in order): CONTENT or =CONTENT encodes it all, NAME=CONTENT keeps NAME and encodes CONTENT, @FILE and NAME@FILE encode a file''s bytes (@- for stdin). Spaces become +'
            cand -F 'A multipart/form-data field (repeatable; POST by default): NAME=VALUE, NAME=@FILE (a file upload, with its file name), NAME=<FILE (a field read from a file), @- and <- for stdin; ;type=MIME and ;filename=NAME after the value; "..." quotes a value holding ; or ,. Not with another body flag, -G or -I'
            cand --form 'A multipart/form-data field (repeatable; POST by default): NAME=VALUE, NAME=@FILE (a file upload, with its file name), NAME=<FILE (a field read from a file), @- and <- for stdin; ;type=MIME and ;filename=NAME after the value; "..." quotes a value holding ; or ,. Not with another body flag, -G or -I'
            cand -K 'Read more flags from FILE (curl''s syntax): one per line, with or without the leading --, `name = value`, `name: value` or `name value`, "..." quoting with \ escapes, # comments; `url = URL` gives the URL. Its flags count as if typed at the place of -K. No default file is read (not ~/.curlrc); at most 1 MiB; no -K inside'
            cand --config 'Read more flags from FILE (curl''s syntax): one per line, with or without the leading --, `name = value`, `name: value` or `name value`, "..." quoting with \ escapes, # comments; `url = URL` gives the URL. Its flags count as if typed at the place of -K. No default file is read (not ~/.curlrc); at most 1 MiB; no -K inside'
            cand --attempts 'Total attempts, the first included (1 to 1000; 1 means no retry)'
            cand --base 'Backoff base: the first retry''s ceiling (at least 1ms). Retry n''s ceiling is min(cap, base * 2^n)'
            cand --cap 'The largest backoff ceiling'
            cand --jitter 'full | equal | decorrelated | none | +DURATION (additive: ceiling + uniform(0, DURATION))'
            cand --deadline 'The whole command, waits included, ends by then (from start-up; 0: none)'
            cand --retry-on 'Status codes retried: codes, ranges (500-599), classes (5xx), comma-separated; replaces the default'
            cand --max-retry-after 'The longest Retry-After honoured; a longer hint is clamped to it (and logged)'
            cand --retry-after-spread 'Random spread added after a Retry-After wait, so clients do not return together (0: off)'
            cand --timeout 'Timeout of one attempt, the whole exchange including the body (0: none)'
            cand -m 'curl''s name for --timeout, in plain seconds (fractions allowed: 2.5; 0: none)'
            cand --max-time 'curl''s name for --timeout, in plain seconds (fractions allowed: 2.5; 0: none)'
            cand --connect-timeout 'Timeout for opening the connection: DNS and TCP (0: none of its own)'
            cand --stall-timeout 'An attempt fails, retryably, when no byte arrives for this long (0: off)'
            cand --seed 'Seed for the random draws, so a run can be replayed (-v shows the one used)'
            cand --idempotency-key 'Send this Idempotency-Key on every attempt; allows replaying POST. auto: a new random UUID each run (it covers this run''s retries, not a re-run: derive a key from the job for that)'
            cand --state 'Share a circuit breaker and a retry budget per target with other runs through FILE'
            cand --breaker-threshold 'With --state: consecutive failed runs (exit 4, 5, 6) that open the circuit'
            cand --breaker-cooldown 'With --state: how long an open circuit refuses (exit 7) before one run probes'
            cand --retry-budget 'With --state: retries allowed, as a percentage of successful requests in the window (0% and above: over 100% allows more retries than successes)'
            cand --budget-window 'With --state: the sliding window of the retry budget (at least 1s)'
            cand --budget-floor 'With --state: retries always allowed per window, so a quiet job can still retry'
            cand --state-ttl 'With --state: a target with no run for this long is forgotten, unless its circuit is open'
            cand -o 'Write the body to FILE (renamed into place only when complete and successful)'
            cand --output 'Write the body to FILE (renamed into place only when complete and successful)'
            cand -D 'Write the final response''s status line and headers to FILE (''-'': stdout, before the body, as curl)'
            cand --dump-header 'Write the final response''s status line and headers to FILE (''-'': stdout, before the body, as curl)'
            cand --max-filesize 'Fail (exit 6) when the body is larger than SIZE bytes (k, M, G suffixes)'
            cand -w 'After the run, print FORMAT on stdout: curl''s variables (%{http_code}, %{time_total}, %{json}, %header{NAME}...; README lists them), \n for a newline; @FILE reads it'
            cand --write-out 'After the run, print FORMAT on stdout: curl''s variables (%{http_code}, %{time_total}, %{json}, %header{NAME}...; README lists them), \n for a newline; @FILE reads it'
            cand --log-format 'Format of the stderr log'
            cand --color 'Colour on stderr (auto: on a terminal, honouring NO_COLOR and CLICOLOR_FORCE)'
            cand --resolve 'Use ADDR for HOST:PORT instead of looking it up (repeatable): HOST ''*'' matches any host; several addresses are tried in order; an IPv6 address may be written in [brackets]; a leading ''+'' is accepted (curl''s cache timeout; there is no cache across runs). TLS and the Host header keep the URL''s name'
            cand --connect-to 'A request to HOST1:PORT1 connects to HOST2:PORT2 instead (repeatable, the first match wins); an empty HOST1 or PORT1 matches any, an empty HOST2 or PORT2 keeps the URL''s. TLS and the Host header keep the URL''s name'
            cand --unix-socket 'Send the request over this Unix socket (a local daemon, /var/run/docker.sock); the URL gives the Host header and the path. A socket absent or refusing is retried as a refused connection; no proxy is used'
            cand -E 'Client certificate (mutual TLS): a PEM file with the certificate chain, and the private key too unless --key names it. '':PASSWORD'' is accepted only for a key that is not encrypted (an encrypted key is refused: decrypt it with openssl); ''\:'' escapes a colon of the file name'
            cand --cert 'Client certificate (mutual TLS): a PEM file with the certificate chain, and the private key too unless --key names it. '':PASSWORD'' is accepted only for a key that is not encrypted (an encrypted key is refused: decrypt it with openssl); ''\:'' escapes a colon of the file name'
            cand --key 'The private key of --cert, a PEM file (PKCS#8, PKCS#1 or SEC1; not encrypted)'
            cand --cert-type 'The format of --cert: only PEM (DER and P12 are refused, with the openssl command that converts them)'
            cand --netrc-file 'Like --netrc, with this file instead of ~/.netrc'
            cand -Y 'An attempt whose body arrives slower than BYTES per second, measured over spans of --speed-time (30 s by default), fails as a stall, retryably (k, M, G suffixes; 0: off)'
            cand --speed-limit 'An attempt whose body arrives slower than BYTES per second, measured over spans of --speed-time (30 s by default), fails as a stall, retryably (k, M, G suffixes; 0: off)'
            cand -y 'The span of --speed-limit, in seconds (fractions allowed; at least 1ms); given alone, the limit is 1 byte per second, as in curl'
            cand --speed-time 'The span of --speed-limit, in seconds (fractions allowed; at least 1ms); given alone, the limit is 1 byte per second, as in curl'
            cand -C 'Resume the -o file from its size: only ''-'' is accepted (curl''s ''-C -'')'
            cand --continue-at 'Resume the -o file from its size: only ''-'' is accepted (curl''s ''-C -'')'
            cand --etag-save 'After a successful run, write the response''s ETag to FILE (an empty file when it has none); a 304 leaves FILE as it was. Written by temporary file and rename'
            cand --etag-compare 'Send If-None-Match with the ETag in FILE (its first line, at most 8 KiB); a 304 Not Modified is then a success (exit 0) that leaves -o as it was. A missing or empty FILE sends no If-None-Match when --etag-save is given too (the first run), and is a usage error otherwise'
            cand -z 'Send If-Modified-Since DATE, or with a leading ''-'' If-Unmodified-Since; a name of an existing file gives its modification time'
            cand --time-cond 'Send If-Modified-Since DATE, or with a leading ''-'' If-Unmodified-Since; a name of an existing file gives its modification time'
            cand -b 'Send cookies: ''NAME=VALUE; NAME2=VALUE2'' as given, or (no ''='') a Netscape cookie file, read once (at most 4 MiB), whose cookies are sent only where their domain and path match, ''secure'' ones only over https, expired ones never (repeatable)'
            cand --cookie 'Send cookies: ''NAME=VALUE; NAME2=VALUE2'' as given, or (no ''='') a Netscape cookie file, read once (at most 4 MiB), whose cookies are sent only where their domain and path match, ''secure'' ones only over https, expired ones never (repeatable)'
            cand -c 'curl''s flag, refused: Set-Cookie answers are not stored'
            cand -L 'Follow redirects (each hop belongs to the attempt that started it)'
            cand --location 'Follow redirects (each hop belongs to the attempt that started it)'
            cand -I 'Send a HEAD request and show the response''s status line and headers (with -G, the data goes in the URL)'
            cand --head 'Send a HEAD request and show the response''s status line and headers (with -G, the data goes in the URL)'
            cand -k 'Do not verify TLS certificates (says so on stderr)'
            cand --insecure 'Do not verify TLS certificates (says so on stderr)'
            cand --compressed 'Ask for a compressed response (Accept-Encoding: gzip) and decompress it'
            cand -G 'Send the -d/--data-binary/--data-urlencode data in the URL''s query instead of a body (joined with &, after a ? or an & as the URL needs): GET, or HEAD with -I'
            cand --get 'Send the -d/--data-binary/--data-urlencode data in the URL''s query instead of a body (joined with &, after a ? or an & as the URL needs): GET, or HEAD with -I'
            cand --retry-unsafe 'Replay non-idempotent requests (POST, PATCH) after ambiguous failures, without a key'
            cand --explain 'Print the resolved policy and its schedule on stdout, and send nothing'
            cand -i 'Include the final response''s status line and headers in the output'
            cand --include 'Include the final response''s status line and headers in the output'
            cand --fail-with-body 'Also write the body of a final error response'
            cand -N 'Stream the body as it arrives; a failure after the first byte is then not retried'
            cand --no-buffer 'Stream the body as it arrives; a failure after the first byte is then not retried'
            cand -s 'Only the final error line on stderr'
            cand --silent 'Only the final error line on stderr'
            cand -v 'Add request and response headers, and the seed, to the log'
            cand --verbose 'Add request and response headers, and the seed, to the log'
            cand -n 'Take the login and password for the URL''s host from ~/.netrc (machine, default; an absent file is an error). Not used when the URL has a user, or -u or an Authorization header is given; not sent to another host after a redirect'
            cand --netrc 'Take the login and password for the URL''s host from ~/.netrc (machine, default; an absent file is an error). Not used when the URL has a user, or -u or an Authorization header is given; not sent to another host after a redirect'
            cand --netrc-optional 'Like --netrc (or --netrc-file), but an absent file is fine'
            cand -R 'Set the -o file''s modification time from the response''s Last-Modified'
            cand --remote-time 'Set the -o file''s modification time from the response''s Last-Modified'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
            cand demo 'Start a failing server on loopback and run the client against it, to show the log'
            cand simulate 'Simulate a fleet of clients retrying against a recovering server (no network)'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'retry-http;demo'= {
            cand -h 'Print help'
            cand --help 'Print help'
        }
        &'retry-http;simulate'= {
            cand --clients 'Clients, all sending their first request at t = 0'
            cand --outage 'How long the server rejects every request'
            cand --capacity 'Requests served per window once the outage ends'
            cand --window 'The capacity window'
            cand --attempts 'Attempts per client, the first included (1 to 1000)'
            cand --base 'Backoff base (the pause of the fixed strategy)'
            cand --cap 'Backoff cap'
            cand --deadline 'Each client''s deadline (none by default)'
            cand --seed 'Seed of the first run; run i uses seed + i'
            cand --runs 'Runs to average over (1 to 1000)'
            cand --strategies 'Strategies to compare, comma-separated: fixed, exponential, full, equal, decorrelated'
            cand --format 'Output format'
            cand --plot 'Draw load over time per strategy against the capacity line, as SVG'
            cand --search 'Search the policy space (jitter x base x cap) and print the Pareto front of calls against time to the last success, as flags to paste'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'retry-http;help'= {
            cand demo 'Start a failing server on loopback and run the client against it, to show the log'
            cand simulate 'Simulate a fleet of clients retrying against a recovering server (no network)'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'retry-http;help;demo'= {
        }
        &'retry-http;help;simulate'= {
        }
        &'retry-http;help;help'= {
        }
    ]
    $completions[$command]
}
