# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_retry_http_global_optspecs
    string join \n X/request= H/header= d/data= data-binary= json= u/user= A/user-agent= L/location max-redirs= I/head x/proxy= noproxy= k/insecure cacert= compressed G/get data-urlencode= F/form= K/config= attempts= base= cap= jitter= deadline= splay= retry-on= max-retry-after= retry-after-spread= timeout= m/max-time= connect-timeout= stall-timeout= seed= idempotency-key= retry-unsafe explain until-status= until-body= until-json= until-header= state= state-timeout= state-on-error= state-cacert= breaker-threshold= breaker-cooldown= retry-budget= budget-window= budget-floor= state-ttl= o/output= i/include D/dump-header= fail-with-body N/no-buffer max-filesize= w/write-out= health-exit exit-codes= Z/parallel parallel-max= parallel-max-host= fail-early rate= parallel-immediate s/silent v/verbose log-format= color= retry= retry-delay= retry-max-time= retry-connrefused retry-all-errors resolve= connect-to= unix-socket= E/cert= key= cert-type= n/netrc netrc-file= netrc-optional Y/speed-limit= y/speed-time= C/continue-at= R/remote-time etag-save= etag-compare= z/time-cond= b/cookie= c/cookie-jar= url= e/referer= http2 http2-prior-knowledge http3 http3-only 4/ipv4 6/ipv6 O/remote-name remote-name-all output-dir= create-dirs f/fail S/show-error T/upload-file= data-raw= oauth2-bearer= proto= proto-redir= tls-max= g/globoff q/disable basic p/proxytunnel remove-on-error no-styled-output tcp-nodelay tcp-fastopen no-keepalive keepalive-time= progress-bar no-progress-meter J/remote-header-name stderr= limit-rate= next 1/tlsv1 2/sslv2 3/sslv3 h/help V/version
end

function __fish_retry_http_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_retry_http_global_optspecs) -- $cmd 2>/dev/null
    or argparse -s (__fish_retry_http_global_optspecs) -- $cmd[1..-2] 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_retry_http_using_subcommand
    set -l cmd (__fish_retry_http_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c retry-http -n "__fish_retry_http_needs_command" -s X -l request -d 'The request method (curl\'s name)' -r
complete -c retry-http -n "__fish_retry_http_needs_command" -s H -l header -d 'Add a request header, \'Name: value\' (repeatable)' -r
complete -c retry-http -n "__fish_retry_http_needs_command" -s d -l data -d 'Request body: text, @FILE or @- (stdin); repeats join with &' -r
complete -c retry-http -n "__fish_retry_http_needs_command" -l data-binary -d 'Request body sent byte for byte: text, @FILE, or @- for stdin' -r
complete -c retry-http -n "__fish_retry_http_needs_command" -l json -d 'JSON request body: text, @FILE or @-' -r
complete -c retry-http -n "__fish_retry_http_needs_command" -s u -l user -d 'Basic authentication, USER:PASSWORD' -r
complete -c retry-http -n "__fish_retry_http_needs_command" -s A -l user-agent -d 'The User-Agent header' -r
complete -c retry-http -n "__fish_retry_http_needs_command" -l max-redirs -d 'The most redirects followed with -L' -r
complete -c retry-http -n "__fish_retry_http_needs_command" -s x -l proxy -d 'Use this proxy (http://HOST:PORT); overrides HTTPS_PROXY, http_proxy and ALL_PROXY' -r
complete -c retry-http -n "__fish_retry_http_needs_command" -l noproxy -d 'Hosts reached without the proxy, comma-separated (\'*\' for all); overrides NO_PROXY' -r
complete -c retry-http -n "__fish_retry_http_needs_command" -l cacert -d 'Trust the certificates in this PEM file, besides the system\'s store' -r -F
complete -c retry-http -n "__fish_retry_http_needs_command" -l data-urlencode -d 'Body part URL-encoded as curl does (repeatable; joined with & with -d in order): CONTENT or =CONTENT encodes it all, NAME=CONTENT keeps NAME and encodes CONTENT, @FILE and NAME@FILE encode a file\'s bytes (@- for stdin). Spaces become +' -r
complete -c retry-http -n "__fish_retry_http_needs_command" -s F -l form -d 'A multipart/form-data field (repeatable; POST by default): NAME=VALUE, NAME=@FILE (a file upload, with its file name), NAME=<FILE (a field read from a file), @- and <- for stdin; ;type=MIME and ;filename=NAME after the value; "..." quotes a value holding ; or ,. Not with another body flag, -G or -I' -r
complete -c retry-http -n "__fish_retry_http_needs_command" -s K -l config -d 'Read more flags from FILE (curl\'s syntax): one per line, with or without the leading --, `name = value`, `name: value` or `name value`, "..." quoting with \\ escapes, # comments; `url = URL` adds a URL, as --url does. Its flags count as if typed at the place of -K. No default file is read (not ~/.curlrc); at most 1 MiB; no -K inside' -r -F
complete -c retry-http -n "__fish_retry_http_needs_command" -l attempts -d 'Attempts, the first included [default: 6; unlimited with a --deadline]' -r
complete -c retry-http -n "__fish_retry_http_needs_command" -l base -d 'Backoff base: the first retry\'s ceiling (at least 1ms). Retry n\'s ceiling is min(cap, base * 2^n)' -r
complete -c retry-http -n "__fish_retry_http_needs_command" -l cap -d 'The largest backoff ceiling' -r
complete -c retry-http -n "__fish_retry_http_needs_command" -l jitter -d 'full | equal | decorrelated | none | +DURATION (additive: ceiling + uniform(0, DURATION))' -r -f -a "full\t'uniform(0, ceiling): the default'
equal\t'ceiling/2 + uniform(0, ceiling/2)'
decorrelated\t'uniform(base, 3 x the previous wait), capped'
none\t'the ceiling itself, no randomness'"
complete -c retry-http -n "__fish_retry_http_needs_command" -l deadline -d 'The whole run ends by then, waits included' -r
complete -c retry-http -n "__fish_retry_http_needs_command" -l splay -d 'Before the first attempt, wait an offset in [0, DURATION) that is the same on every run of this host towards this target, so a fleet on one cron schedule is spread (0: none)' -r
complete -c retry-http -n "__fish_retry_http_needs_command" -l retry-on -d 'Status codes retried: codes, ranges (500-599), classes (5xx), comma-separated, from 400 to 599; replaces the default' -r
complete -c retry-http -n "__fish_retry_http_needs_command" -l max-retry-after -d 'The longest Retry-After honoured; a longer hint is clamped to it (and logged)' -r
complete -c retry-http -n "__fish_retry_http_needs_command" -l retry-after-spread -d 'Random spread added after a Retry-After wait, so clients do not return together (0: off)' -r
complete -c retry-http -n "__fish_retry_http_needs_command" -l timeout -d 'Timeout of one attempt' -r
complete -c retry-http -n "__fish_retry_http_needs_command" -s m -l max-time -d 'curl\'s name for --timeout, in plain seconds (fractions allowed: 2.5; at least 0.001; 0: none)' -r
complete -c retry-http -n "__fish_retry_http_needs_command" -l connect-timeout -d 'Timeout for opening the connection: DNS and TCP (0: none of its own)' -r
complete -c retry-http -n "__fish_retry_http_needs_command" -l stall-timeout -d 'An attempt fails, retryably, when no byte arrives, or none of the request is taken by the kernel while it is sent, for this long (0: off)' -r
complete -c retry-http -n "__fish_retry_http_needs_command" -l seed -d 'Seed for the random draws, so a run can be replayed (-v shows the one used)' -r
complete -c retry-http -n "__fish_retry_http_needs_command" -l idempotency-key -d 'Send this Idempotency-Key on every attempt; allows replaying POST' -r
complete -c retry-http -n "__fish_retry_http_needs_command" -l until-status -d 'Ready when the status is in LIST (codes, ranges, classes as in --retry-on), even a 4xx or 5xx; any other answer is not ready yet, 404 included' -r
complete -c retry-http -n "__fish_retry_http_needs_command" -l until-body -d 'Ready when the body matches REGEX (the regex crate\'s syntax). Repeatable: all must hold' -r
complete -c retry-http -n "__fish_retry_http_needs_command" -l until-json -d 'Ready when the JSON body has VALUE at the RFC 6901 POINTER: /status=green, /ready=true, /nodes/0/state="up". Repeatable' -r
complete -c retry-http -n "__fish_retry_http_needs_command" -l until-header -d 'Ready when the response has header NAME with a value matching REGEX. Repeatable' -r
complete -c retry-http -n "__fish_retry_http_needs_command" -l state -d 'Share a circuit breaker, a retry budget and Retry-After per target with other runs through a file or a Redis server (STORE: a file\'s path, or redis://, rediss://, redis+unix://, redis+cluster://)' -r -F
complete -c retry-http -n "__fish_retry_http_needs_command" -l state-timeout -d 'With --state: the most each store operation may take, connecting included, and at most half of what is left of --deadline' -r
complete -c retry-http -n "__fish_retry_http_needs_command" -l state-on-error -d 'With --state: what a store that cannot be used means: open (warn once, go on without it) or closed (send nothing, exit 7)' -r -f -a "open\t''
closed\t''"
complete -c retry-http -n "__fish_retry_http_needs_command" -l state-cacert -d 'With --state rediss://: the CA certificates (PEM) the server\'s must chain to, instead of the system\'s' -r -F
complete -c retry-http -n "__fish_retry_http_needs_command" -l breaker-threshold -d 'With --state or several URLs: consecutive failed runs (exit 4, 5, 6) that open the circuit' -r
complete -c retry-http -n "__fish_retry_http_needs_command" -l breaker-cooldown -d 'With --state or several URLs: how long an open circuit refuses (exit 7) before one run probes' -r
complete -c retry-http -n "__fish_retry_http_needs_command" -l retry-budget -d 'With --state or several URLs: retries allowed, as a percentage of successful requests in the window (0% and above: over 100% allows more retries than successes); a run\'s own retries do not count against it, only other runs\' do' -r
complete -c retry-http -n "__fish_retry_http_needs_command" -l budget-window -d 'With --state or several URLs: the sliding window of the retry budget (at least 1s)' -r
complete -c retry-http -n "__fish_retry_http_needs_command" -l budget-floor -d 'With --state or several URLs: retries always allowed per window, so a quiet job can still retry (other runs\' retries count against it, never a run\'s own)' -r
complete -c retry-http -n "__fish_retry_http_needs_command" -l state-ttl -d 'With --state or several URLs: a target with no run for this long is forgotten, unless it still refuses runs (an open circuit in its cooldown, a probe\'s lease, a shared Retry-After)' -r
complete -c retry-http -n "__fish_retry_http_needs_command" -s o -l output -d 'Write the body to FILE' -r -F
complete -c retry-http -n "__fish_retry_http_needs_command" -s D -l dump-header -d 'Write the final response\'s status line and headers, as the server sent them, to FILE (\'-\': stdout, before the body, as curl)' -r -F
complete -c retry-http -n "__fish_retry_http_needs_command" -l max-filesize -d 'Fail (exit 6) when the body is larger than SIZE bytes (k, M, G suffixes; 0: no limit, as in curl)' -r
complete -c retry-http -n "__fish_retry_http_needs_command" -s w -l write-out -d 'After the run, print FORMAT on stdout (curl\'s -w)' -r
complete -c retry-http -n "__fish_retry_http_needs_command" -l exit-codes -d 'Which exit codes: retry-http\'s own (one per outcome, listed below) or curl\'s for the same endings' -r -f -a "retry-http\t'This tool\'s own codes, one per outcome (the default)'
curl\t'curl\'s codes for the same endings, for scripts written for curl (7.88\'s)'"
complete -c retry-http -n "__fish_retry_http_needs_command" -l parallel-max -d 'With -Z: the most transfers in flight at once, from 1 to 1000 [default: 50, as curl\'s]' -r
complete -c retry-http -n "__fish_retry_http_needs_command" -l parallel-max-host -d 'With -Z: the most transfers in flight at once to one origin (scheme, host, port), from 1 to 1000 [default: 6]' -r
complete -c retry-http -n "__fish_retry_http_needs_command" -l rate -d 'Start at most N transfers per unit of time, as curl\'s --rate: N/s, N/m, N/h, N/d, or N/5m (5 minutes; curl 8.10\'s form); N alone is per hour, as in curl' -r
complete -c retry-http -n "__fish_retry_http_needs_command" -l log-format -d 'Format of the stderr log' -r -f -a "text\t'One human-readable line per attempt'
json\t'One JSON object per line (the schema is in docs/output.md)'"
complete -c retry-http -n "__fish_retry_http_needs_command" -l color -d 'Colour on stderr (auto: on a terminal, honouring NO_COLOR and CLICOLOR_FORCE)' -r -f -a "auto\t'On a terminal, unless NO_COLOR is set (CLICOLOR_FORCE forces it)'
always\t'Always'
never\t'Never'"
complete -c retry-http -n "__fish_retry_http_needs_command" -l retry -d 'curl\'s --retry N: N retries, so N+1 attempts here (--attempts N+1; 0 to 999)' -r
complete -c retry-http -n "__fish_retry_http_needs_command" -l retry-delay -d 'curl\'s --retry-delay: each backoff wait is at least SECONDS, plus a random spread up to SECONDS (--base S --cap S --jitter +S); 0 keeps this tool\'s backoff' -r
complete -c retry-http -n "__fish_retry_http_needs_command" -l retry-max-time -d 'curl\'s --retry-max-time: --deadline SECONDS (0: no limit). The deadline also ends an attempt under way' -r
complete -c retry-http -n "__fish_retry_http_needs_command" -l resolve -d 'Use ADDR for HOST:PORT instead of looking it up (repeatable): HOST \'*\' matches any host; several addresses are tried in order; an IPv6 address may be written in [brackets]; a leading \'+\' is accepted (curl\'s cache timeout; there is no cache across runs). TLS and the Host header keep the URL\'s name' -r
complete -c retry-http -n "__fish_retry_http_needs_command" -l connect-to -d 'A request to HOST1:PORT1 connects to HOST2:PORT2 instead (repeatable, the first match wins); an empty HOST1 or PORT1 matches any, an empty HOST2 or PORT2 keeps the URL\'s. TLS and the Host header keep the URL\'s name' -r
complete -c retry-http -n "__fish_retry_http_needs_command" -l unix-socket -d 'Send the request over this Unix socket (a local daemon, /var/run/docker.sock); the URL gives the Host header and the path. A socket absent or refusing is retried as a refused connection; no proxy is used' -r -F
complete -c retry-http -n "__fish_retry_http_needs_command" -s E -l cert -d 'Client certificate (mutual TLS): a PEM file with the certificate chain, and the private key too unless --key names it. \':PASSWORD\' is accepted only for a key that is not encrypted (an encrypted key is refused: decrypt it with openssl); \'\\:\' escapes a colon of the file name' -r
complete -c retry-http -n "__fish_retry_http_needs_command" -l key -d 'The private key of --cert, a PEM file (PKCS#8, PKCS#1 or SEC1; not encrypted)' -r -F
complete -c retry-http -n "__fish_retry_http_needs_command" -l cert-type -d 'The format of --cert: only PEM (DER and P12 are refused, with the openssl command that converts them)' -r
complete -c retry-http -n "__fish_retry_http_needs_command" -l netrc-file -d 'Like --netrc, with this file instead of ~/.netrc' -r -F
complete -c retry-http -n "__fish_retry_http_needs_command" -s Y -l speed-limit -d 'An attempt whose body arrives slower than BYTES per second, measured over spans of --speed-time (30 s by default), fails as a stall, retryably (k, M, G suffixes; 0: off)' -r
complete -c retry-http -n "__fish_retry_http_needs_command" -s y -l speed-time -d 'The span of --speed-limit, in seconds (fractions allowed; at least 1ms); given alone, the limit is 1 byte per second, as in curl' -r
complete -c retry-http -n "__fish_retry_http_needs_command" -s C -l continue-at -d 'Resume the -o or -O file from its size: only \'-\' is accepted (curl\'s \'-C -\')' -r
complete -c retry-http -n "__fish_retry_http_needs_command" -l etag-save -d 'After a successful run, write the response\'s ETag to FILE (an empty file when it has none); a 304 leaves FILE as it was. Written by temporary file and rename' -r -F
complete -c retry-http -n "__fish_retry_http_needs_command" -l etag-compare -d 'Send If-None-Match with the ETag in FILE (its first line, at most 8 KiB); a 304 Not Modified is then a success (exit 0) that leaves -o as it was. A missing or empty FILE sends no If-None-Match when --etag-save is given too (the first run), and is a usage error otherwise' -r -F
complete -c retry-http -n "__fish_retry_http_needs_command" -s z -l time-cond -d 'Send If-Modified-Since DATE, or with a leading \'-\' If-Unmodified-Since; a name of an existing file gives its modification time' -r
complete -c retry-http -n "__fish_retry_http_needs_command" -s b -l cookie -d 'Send cookies: \'NAME=VALUE; NAME2=VALUE2\' as given, or (no \'=\') a Netscape cookie file, read once (at most 4 MiB), whose cookies are sent only where their domain and path match, \'secure\' ones only over https, expired ones never (repeatable)' -r
complete -c retry-http -n "__fish_retry_http_needs_command" -l url -d 'A URL, as curl\'s --url gives it (repeatable; in order with the positional URLs); @FILE reads one URL a line from FILE (@-: stdin)' -r
complete -c retry-http -n "__fish_retry_http_needs_command" -s e -l referer -d 'Send this Referer header (as curl\'s -e; an empty URL sends none; -H Referer wins)' -r
complete -c retry-http -n "__fish_retry_http_needs_command" -l output-dir -d 'The folder a relative -o or -O file goes in (an absolute -o path is used as it is), for every URL' -r -F
complete -c retry-http -n "__fish_retry_http_needs_command" -s T -l upload-file -d 'Upload FILE (- for stdin) as the request body, byte for byte: PUT unless a method is given' -r -F
complete -c retry-http -n "__fish_retry_http_needs_command" -l data-raw -d 'Request body like -d, but a leading @ is sent as it is (no file is read); joins -d and --data-urlencode with & in command-line order' -r
complete -c retry-http -n "__fish_retry_http_needs_command" -l oauth2-bearer -d 'Send \'Authorization: Bearer TOKEN\' (masked in the log, like any Authorization; not sent to another origin under -L). -H Authorization wins; it replaces -u\'s, as in curl' -r
complete -c retry-http -n "__fish_retry_http_needs_command" -l proto -d 'The URL schemes allowed, in curl\'s syntax: a comma-separated list of names (http, https, all, or curl\'s other protocols, which change nothing here), each after + (add, the default), - (remove) or = (only these), from all: \'=https\', \'-all,+https\'' -r
complete -c retry-http -n "__fish_retry_http_needs_command" -l proto-redir -d 'The schemes a redirect may go to under -L, in --proto\'s syntax, from http,https: a redirect to another is not followed (exit 6, not retried). A redirect must also be allowed by --proto' -r
complete -c retry-http -n "__fish_retry_http_needs_command" -l tls-max -d 'The highest TLS version offered: 1.2, 1.3 or default (1.3). 1.0 and 1.1 are refused: TLS below 1.2 is not supported' -r
complete -c retry-http -n "__fish_retry_http_needs_command" -l keepalive-time -d 'Accepted, with no effect (see --tcp-nodelay): a whole number of seconds, as curl' -r
complete -c retry-http -n "__fish_retry_http_needs_command" -s L -l location -d 'Follow redirects'
complete -c retry-http -n "__fish_retry_http_needs_command" -s I -l head -d 'Send a HEAD request and show the response\'s status line and headers (with -G, the data goes in the URL)'
complete -c retry-http -n "__fish_retry_http_needs_command" -s k -l insecure -d 'Do not verify TLS certificates (says so on stderr)'
complete -c retry-http -n "__fish_retry_http_needs_command" -l compressed -d 'Ask for a compressed response (Accept-Encoding: gzip) and decompress it'
complete -c retry-http -n "__fish_retry_http_needs_command" -s G -l get -d 'Send the -d/--data-binary/--data-urlencode data in the URL\'s query instead of a body (joined with &, after a ? or an & as the URL needs): GET, or HEAD with -I'
complete -c retry-http -n "__fish_retry_http_needs_command" -l retry-unsafe -d 'Replay non-idempotent requests (POST, PATCH) after ambiguous failures, without a key'
complete -c retry-http -n "__fish_retry_http_needs_command" -l explain -d 'Print the policy and its schedule on stdout; send nothing'
complete -c retry-http -n "__fish_retry_http_needs_command" -s i -l include -d 'Include the final response\'s status line and headers in the output, as the server sent them'
complete -c retry-http -n "__fish_retry_http_needs_command" -l fail-with-body -d 'Also write the body of a final error response'
complete -c retry-http -n "__fish_retry_http_needs_command" -s N -l no-buffer -d 'Stream the body as it arrives; a failure after the first byte is then not retried'
complete -c retry-http -n "__fish_retry_http_needs_command" -l health-exit -d 'Exit as a health check: 0 for success, 1 for every failure'
complete -c retry-http -n "__fish_retry_http_needs_command" -s Z -l parallel -d 'Run the transfers of several URLs at the same time (curl\'s -Z), up to --parallel-max at once and --parallel-max-host to one origin; without it they run one after the other, in URL order'
complete -c retry-http -n "__fish_retry_http_needs_command" -l fail-early -d 'Start no new transfer after the first one that fails (those in flight finish)'
complete -c retry-http -n "__fish_retry_http_needs_command" -l parallel-immediate -d 'Accepted, with no effect: curl\'s way to open connections at once rather than wait to multiplex; HTTP/1.1 never multiplexes, so each transfer in flight has its own'
complete -c retry-http -n "__fish_retry_http_needs_command" -s s -l silent -d 'Only the final error line on stderr'
complete -c retry-http -n "__fish_retry_http_needs_command" -s v -l verbose -d 'Add the headers and the seed to the log'
complete -c retry-http -n "__fish_retry_http_needs_command" -l retry-connrefused -d 'curl\'s --retry-connrefused: accepted, a refused connection is retried already'
complete -c retry-http -n "__fish_retry_http_needs_command" -l retry-all-errors -d 'curl\'s --retry-all-errors: --retry-on 4xx,5xx. A request that is not safe to replay still is not replayed (see --idempotency-key)'
complete -c retry-http -n "__fish_retry_http_needs_command" -s n -l netrc -d 'Take the login and password for the URL\'s host from ~/.netrc (machine, default; an absent file is an error). Not used when the URL has a user, or -u or an Authorization header is given; not sent to another host after a redirect'
complete -c retry-http -n "__fish_retry_http_needs_command" -l netrc-optional -d 'Like --netrc (or --netrc-file), but an absent file is fine'
complete -c retry-http -n "__fish_retry_http_needs_command" -s R -l remote-time -d 'Set the -o or -O file\'s modification time from the response\'s Last-Modified'
complete -c retry-http -n "__fish_retry_http_needs_command" -l http1.1 -d 'Speak HTTP/1.1: accepted, it is what retry-http always speaks'
complete -c retry-http -n "__fish_retry_http_needs_command" -l http2 -d 'curl\'s "try HTTP/2, else HTTP/1.1": accepted, the request goes over HTTP/1.1'
complete -c retry-http -n "__fish_retry_http_needs_command" -l http3 -d 'curl\'s "try HTTP/3, else an older version": accepted, the request goes over HTTP/1.1'
complete -c retry-http -n "__fish_retry_http_needs_command" -s 4 -l ipv4 -d 'Resolve host names to IPv4 addresses only (the last of -4 and -6 counts, as in curl)'
complete -c retry-http -n "__fish_retry_http_needs_command" -s 6 -l ipv6 -d 'Resolve host names to IPv6 addresses only (the last of -4 and -6 counts, as in curl)'
complete -c retry-http -n "__fish_retry_http_needs_command" -s O -l remote-name -d 'Write the body to a file named as the URL\'s last path segment, in the current folder'
complete -c retry-http -n "__fish_retry_http_needs_command" -l remote-name-all -d 'Give every URL without an -o or -O its remote name, as -O does (curl\'s flag)'
complete -c retry-http -n "__fish_retry_http_needs_command" -l create-dirs -d 'Create the missing folders of the -o/-O path (--output-dir included)'
complete -c retry-http -n "__fish_retry_http_needs_command" -s f -l fail -d 'curl\'s --fail, accepted: it is what retry-http always does'
complete -c retry-http -n "__fish_retry_http_needs_command" -s S -l show-error -d 'curl\'s --show-error, accepted: with -s, the final error line is always shown'
complete -c retry-http -n "__fish_retry_http_needs_command" -s g -l globoff -d 'Accepted: retry-http never expands {} and [] in a URL (curl\'s globbing); they are sent percent-encoded'
complete -c retry-http -n "__fish_retry_http_needs_command" -s q -l disable -d 'Accepted: no ~/.curlrc is read anyway (curl\'s -q, first on its command line)'
complete -c retry-http -n "__fish_retry_http_needs_command" -l basic -d 'Accepted: -u sends Basic authentication, the only kind -u sends here'
complete -c retry-http -n "__fish_retry_http_needs_command" -s p -l proxytunnel -d 'Accepted: every proxy is reached through a CONNECT tunnel already'
complete -c retry-http -n "__fish_retry_http_needs_command" -l remove-on-error -d 'Accepted: a failed run never leaves a partial -o file'
complete -c retry-http -n "__fish_retry_http_needs_command" -l no-styled-output -d 'Accepted: retry-http does not style the headers it shows'
complete -c retry-http -n "__fish_retry_http_needs_command" -l tcp-nodelay -d 'Accepted, with no effect: the TCP settings are the system\'s (each attempt opens its own connection, so keep-alive does not arise)'
complete -c retry-http -n "__fish_retry_http_needs_command" -l tcp-fastopen -d 'Accepted, with no effect (see --tcp-nodelay)'
complete -c retry-http -n "__fish_retry_http_needs_command" -l no-keepalive -d 'Accepted, with no effect (see --tcp-nodelay)'
complete -c retry-http -n "__fish_retry_http_needs_command" -s '#' -l progress-bar -d 'Accepted: the progress line is shown on a terminal anyway (one line, not curl\'s bar or meter)'
complete -c retry-http -n "__fish_retry_http_needs_command" -l no-progress-meter -d 'Hide the download progress line (as -s does), and nothing else'
complete -c retry-http -n "__fish_retry_http_needs_command" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c retry-http -n "__fish_retry_http_needs_command" -s V -l version -d 'Print version'
complete -c retry-http -n "__fish_retry_http_needs_command" -a "demo" -d 'Start a failing server on loopback and run the client against it, to show the log'
complete -c retry-http -n "__fish_retry_http_needs_command" -a "simulate" -d 'Simulate a fleet of clients retrying: an outage, an overload, failures (no network)'
complete -c retry-http -n "__fish_retry_http_needs_command" -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c retry-http -n "__fish_retry_http_using_subcommand demo" -s h -l help -d 'Print help'
complete -c retry-http -n "__fish_retry_http_using_subcommand simulate" -l model -d 'The model: outage (the server is down, then serves a fixed capacity), overload (latency grows with load, clients time out and retry, a short trigger), failure-rate (each call fails with probability p), cron (a fleet on one cron schedule: where each period\'s load lands, with or without --splay; it takes --clients, --format and its own flags), limiter (one batch of 300 URLs against a token bucket and a fixed window of 40/s, with and without the adaptive pacer; it takes --seed and --format)' -r -f -a "outage\t'A server down for a while, then serving a fixed capacity per window (after the AWS Architecture Blog study Exponential Backoff And Jitter)'
overload\t'A server whose latency grows with the requests in flight, clients with a timeout, and a short trigger (after Brooker, Congestive collapse, 2023)'
failure-rate\t'Calls that fail independently with probability p (after Brooker, Fixing retries with token buckets and circuit breakers, 2022)'
cron\t'A fleet of hosts on one cron schedule, with or without a splay: the busiest second of each period against the mean, per request and per store operation'
limiter\t'One batch against a limiter that does not say its rate (a token bucket as nginx limit_req, a fixed window), with and without the batch\'s adaptive pacer'"
complete -c retry-http -n "__fish_retry_http_using_subcommand simulate" -l clients -d 'Clients (1 to 1000000). Outage: 200, all sending their first request at t = 0. Overload: 1000, each first try from one of them at random (closed population: each waits for its run to end). Failure-rate: 100, sharing the load. Cron: 100000 hosts, each running once a period' -r
complete -c retry-http -n "__fish_retry_http_using_subcommand simulate" -l attempts -d 'Attempts per run, the first included (1 to 1000). Outage: 8; overload and failure-rate: 3' -r
complete -c retry-http -n "__fish_retry_http_using_subcommand simulate" -l base -d 'Backoff base (the pause of the fixed strategy). 100ms for every model' -r
complete -c retry-http -n "__fish_retry_http_using_subcommand simulate" -l cap -d 'Backoff cap. Outage: 8s; overload and failure-rate: 2s' -r
complete -c retry-http -n "__fish_retry_http_using_subcommand simulate" -l seed -d 'Seed of the first run; run i uses seed + i' -r
complete -c retry-http -n "__fish_retry_http_using_subcommand simulate" -l runs -d 'Runs (seeds) per strategy and point (1 to 1000). Outage: runs averaged, default 1. Overload: only with --sweep, the seeds of each point, default 3. Failure-rate: runs pooled, default 1' -r
complete -c retry-http -n "__fish_retry_http_using_subcommand simulate" -l strategies -d 'Strategies to compare, comma-separated. Outage: fixed, exponential, full, equal, decorrelated (default: these five), shared-budget, shared-breaker. Overload and failure-rate: no-retry, retries (immediate), fixed, exponential, full, equal, decorrelated, bucket (a token bucket per client), breaker (a circuit breaker per client), shared-budget, shared-breaker (the retry budget and circuit breaker of --state, one for the whole fleet); default: all eleven' -r -f -a "fixed\t'the same pause every time'
exponential\t'base x 2^n up to the cap, no jitter'
full\t'full jitter'
equal\t'equal jitter'
decorrelated\t'decorrelated jitter'
no-retry\t'one try (overload and failure-rate)'
retries\t'immediate retries (overload and failure-rate)'
bucket\t'a token bucket per client (overload and failure-rate)'
breaker\t'a circuit breaker per client (overload and failure-rate)'
shared-budget\t'one retry budget for the fleet, as --state keeps it'
shared-breaker\t'one circuit breaker and retry budget for the fleet, as --state keeps them'"
complete -c retry-http -n "__fish_retry_http_using_subcommand simulate" -l format -d 'Output format' -r -f -a "table\t'An aligned table'
json\t'A JSON array of objects'"
complete -c retry-http -n "__fish_retry_http_using_subcommand simulate" -l plot -d 'Draw an SVG plot. Outage: load over time per strategy against the capacity line. Overload: goodput and offered load over time per strategy, the trigger shaded; with --sweep, the boundary map. Failure-rate (with --sweep): amplification and success rate against p per strategy, one panel per client count' -r -F
complete -c retry-http -n "__fish_retry_http_using_subcommand simulate" -l outage -d 'How long the server rejects every request (default 600ms)' -r
complete -c retry-http -n "__fish_retry_http_using_subcommand simulate" -l capacity -d 'Requests served per window once the outage ends (default 24)' -r
complete -c retry-http -n "__fish_retry_http_using_subcommand simulate" -l window -d 'The capacity window (default 100ms)' -r
complete -c retry-http -n "__fish_retry_http_using_subcommand simulate" -l deadline -d 'Each client\'s deadline (none by default)' -r
complete -c retry-http -n "__fish_retry_http_using_subcommand simulate" -l retry-budget -d 'The shared strategies\' retry budget: retries allowed as a percentage of the fleet\'s successful requests in 10m (default 10%, as --state\'s)' -r
complete -c retry-http -n "__fish_retry_http_using_subcommand simulate" -l budget-floor -d 'The shared strategies\' retries always allowed per window, fleet-wide (default 3, as --state\'s: a run\'s own retries do not count against it)' -r
complete -c retry-http -n "__fish_retry_http_using_subcommand simulate" -l breaker-threshold -d 'shared-breaker\'s failed runs in a row that open the fleet\'s circuit for 30s (default 5, as --state\'s)' -r
complete -c retry-http -n "__fish_retry_http_using_subcommand simulate" -l population -d 'Open (default: first tries arrive whatever happens) or closed (each client waits for its run to end, then thinks)' -r -f -a "open\t'First tries keep coming whatever happens (each cron tick is a new run)'
closed\t'A fixed population of clients, each waiting for its answer before its next run'"
complete -c retry-http -n "__fish_retry_http_using_subcommand simulate" -l spike-rate -d 'First tries per second during a spike (default 80; 0.01 to 100000)' -r
complete -c retry-http -n "__fish_retry_http_using_subcommand simulate" -l trigger-at -d 'When the trigger starts (default 20s; at least 1s)' -r
complete -c retry-http -n "__fish_retry_http_using_subcommand simulate" -l trigger-for -d 'How long the trigger lasts (default 5s)' -r
complete -c retry-http -n "__fish_retry_http_using_subcommand simulate" -l capacity-drop -d 'The fraction of the server\'s capacity lost during the trigger (default 0; 0 to 0.99)' -r
complete -c retry-http -n "__fish_retry_http_using_subcommand simulate" -l timeout -d 'The client\'s timeout per try (default 3s)' -r
complete -c retry-http -n "__fish_retry_http_using_subcommand simulate" -l per-request -d 'What each request in flight adds to the server\'s latency (default 10ms)' -r
complete -c retry-http -n "__fish_retry_http_using_subcommand simulate" -l network -d 'What the network adds each way, on average: an exponential delay (default 100ms)' -r
complete -c retry-http -n "__fish_retry_http_using_subcommand simulate" -l base-rate -d 'First tries per second, all clients together (0.01 to 100000). Overload: before and after the trigger, default 40. Failure-rate: default 100' -r
complete -c retry-http -n "__fish_retry_http_using_subcommand simulate" -l duration -d 'How long the simulated run lasts. Overload: 80s; failure-rate: 120s' -r
complete -c retry-http -n "__fish_retry_http_using_subcommand simulate" -l latency -d 'Overload: the server\'s latency with nothing in flight (default 1s). Failure-rate: how long a call takes (default 10ms)' -r
complete -c retry-http -n "__fish_retry_http_using_subcommand simulate" -l failure-rate -d 'The probability that a call fails (default 0.1; 0 to 1)' -r
complete -c retry-http -n "__fish_retry_http_using_subcommand simulate" -l splay -d 'Each host waits a stable offset in [0, DURATION) before its run, as --splay does (default 0: none; at most the period)' -r
complete -c retry-http -n "__fish_retry_http_using_subcommand simulate" -l period -d 'The schedule\'s period: every host\'s cron fires at its second 0 (default 1m; whole seconds, 1s to 1d)' -r
complete -c retry-http -n "__fish_retry_http_using_subcommand simulate" -l store-ops -d 'Store round trips per run (default 3, the common path: connect, admission, final record; 4 on a failure path; 1 to 10)' -r
complete -c retry-http -n "__fish_retry_http_using_subcommand simulate" -l sweep -d 'Overload: the vulnerability boundary, spike rate (50 to 100 first tries/s) x trigger length (1, 2, 5, 10, 20 s), recovered share over --runs seeds. Failure-rate: p from 0 to 0.5 by 0.05 x 10, 100 and 1000 clients sharing the load'
complete -c retry-http -n "__fish_retry_http_using_subcommand simulate" -l search -d 'Search the policy space (jitter x base x cap) and print the Pareto front of calls against time to the last success, as flags to paste'
complete -c retry-http -n "__fish_retry_http_using_subcommand simulate" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c retry-http -n "__fish_retry_http_using_subcommand help; and not __fish_seen_subcommand_from demo simulate help" -f -a "demo" -d 'Start a failing server on loopback and run the client against it, to show the log'
complete -c retry-http -n "__fish_retry_http_using_subcommand help; and not __fish_seen_subcommand_from demo simulate help" -f -a "simulate" -d 'Simulate a fleet of clients retrying: an outage, an overload, failures (no network)'
complete -c retry-http -n "__fish_retry_http_using_subcommand help; and not __fish_seen_subcommand_from demo simulate help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
