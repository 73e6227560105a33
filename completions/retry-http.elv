
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
            cand -X 'The request method (curl''s name)'
            cand --request 'The request method (curl''s name)'
            cand -H 'Add a request header, ''Name: value'' (repeatable)'
            cand --header 'Add a request header, ''Name: value'' (repeatable)'
            cand -d 'Request body: text, @FILE or @- (stdin); repeats join with &'
            cand --data 'Request body: text, @FILE or @- (stdin); repeats join with &'
            cand --data-binary 'Request body sent byte for byte: text, @FILE, or @- for stdin'
            cand --json 'JSON request body: text, @FILE or @-'
            cand -u 'Basic authentication, USER:PASSWORD'
            cand --user 'Basic authentication, USER:PASSWORD'
            cand -A 'The User-Agent header'
            cand --user-agent 'The User-Agent header'
            cand --max-redirs 'The most redirects followed with -L'
            cand -x 'Use this proxy (http://HOST:PORT); overrides HTTPS_PROXY, http_proxy and ALL_PROXY'
            cand --proxy 'Use this proxy (http://HOST:PORT); overrides HTTPS_PROXY, http_proxy and ALL_PROXY'
            cand --noproxy 'Hosts reached without the proxy, comma-separated (''*'' for all); overrides NO_PROXY'
            cand --cacert 'Trust the certificates in this PEM file, besides the system''s store'
            cand --attempts 'Attempts, the first included'
            cand --base 'Backoff base: the first retry''s ceiling (at least 1ms). Retry n''s ceiling is min(cap, base * 2^n)'
            cand --cap 'The largest backoff ceiling'
            cand --jitter 'full | equal | decorrelated | none | +DURATION (additive: ceiling + uniform(0, DURATION))'
            cand --deadline 'The whole run ends by then, waits included'
            cand --retry-on 'Status codes retried: codes, ranges (500-599), classes (5xx), comma-separated; replaces the default'
            cand --max-retry-after 'The longest Retry-After honoured; a longer hint is clamped to it (and logged)'
            cand --retry-after-spread 'Random spread added after a Retry-After wait, so clients do not return together (0: off)'
            cand --timeout 'Timeout of one attempt'
            cand -m 'curl''s name for --timeout, in plain seconds (fractions allowed: 2.5; 0: none)'
            cand --max-time 'curl''s name for --timeout, in plain seconds (fractions allowed: 2.5; 0: none)'
            cand --connect-timeout 'Timeout for opening the connection: DNS and TCP (0: none of its own)'
            cand --stall-timeout 'An attempt fails, retryably, when no byte arrives for this long (0: off)'
            cand --seed 'Seed for the random draws, so a run can be replayed (-v shows the one used)'
            cand --idempotency-key 'Send this Idempotency-Key on every attempt (auto: a random UUID); allows replaying POST'
            cand --state 'Share a circuit breaker and a retry budget per target with other runs through FILE'
            cand --breaker-threshold 'With --state: consecutive failed runs (exit 4, 5, 6) that open the circuit'
            cand --breaker-cooldown 'With --state: how long an open circuit refuses (exit 7) before one run probes'
            cand --retry-budget 'With --state: retries allowed, as a percentage of successful requests in the window (0% and above: over 100% allows more retries than successes)'
            cand --budget-window 'With --state: the sliding window of the retry budget (at least 1s)'
            cand --budget-floor 'With --state: retries always allowed per window, so a quiet job can still retry'
            cand --state-ttl 'With --state: a target with no run for this long is forgotten, unless its circuit is open'
            cand -o 'Write the body to FILE'
            cand --output 'Write the body to FILE'
            cand -D 'Write the final response''s status line and headers to FILE (''-'' for stdout)'
            cand --dump-header 'Write the final response''s status line and headers to FILE (''-'' for stdout)'
            cand --max-filesize 'Fail (exit 6) when the body is larger than SIZE bytes (k, M, G suffixes)'
            cand -w 'After the run, print FORMAT on stdout (curl''s -w)'
            cand --write-out 'After the run, print FORMAT on stdout (curl''s -w)'
            cand --log-format 'Format of the stderr log'
            cand --color 'Colour on stderr (auto: on a terminal, honouring NO_COLOR and CLICOLOR_FORCE)'
            cand --retry 'curl''s flag, answered with this tool''s equivalent'
            cand --retry-delay 'curl''s flag, answered with this tool''s equivalent'
            cand --retry-max-time 'curl''s flag, answered with this tool''s equivalent'
            cand --url 'The URL, as curl''s --url gives it, instead of the positional URL (one of the two, once: one request per run)'
            cand -e 'Send this Referer header (as curl''s -e; an empty URL sends none; -H Referer wins)'
            cand --referer 'Send this Referer header (as curl''s -e; an empty URL sends none; -H Referer wins)'
            cand --output-dir 'The folder a relative -o or -O file goes in (an absolute -o path is used as it is)'
            cand -L 'Follow redirects'
            cand --location 'Follow redirects'
            cand -I 'Send a HEAD request and show the response''s status line and headers'
            cand --head 'Send a HEAD request and show the response''s status line and headers'
            cand -k 'Do not verify TLS certificates (says so on stderr)'
            cand --insecure 'Do not verify TLS certificates (says so on stderr)'
            cand --compressed 'Ask for a compressed response (Accept-Encoding: gzip) and decompress it'
            cand --retry-unsafe 'Replay non-idempotent requests (POST, PATCH) after ambiguous failures, without a key'
            cand --explain 'Print the policy and its schedule on stdout; send nothing'
            cand -i 'Include the final response''s status line and headers in the output'
            cand --include 'Include the final response''s status line and headers in the output'
            cand --fail-with-body 'Also write the body of a final error response'
            cand -N 'Stream the body as it arrives; a failure after the first byte is then not retried'
            cand --no-buffer 'Stream the body as it arrives; a failure after the first byte is then not retried'
            cand -s 'Only the final error line on stderr'
            cand --silent 'Only the final error line on stderr'
            cand -v 'Add the headers and the seed to the log'
            cand --verbose 'Add the headers and the seed to the log'
            cand --retry-connrefused 'curl''s flag, answered with this tool''s equivalent'
            cand --retry-all-errors 'curl''s flag, answered with this tool''s equivalent'
            cand --http1.1 'Speak HTTP/1.1: accepted, it is what retry-http always speaks'
            cand --http2 'curl''s flag, refused: retry-http speaks HTTP/1.1 only'
            cand --http2-prior-knowledge 'curl''s flag, refused: retry-http speaks HTTP/1.1 only'
            cand --http3 'curl''s flag, refused: retry-http speaks HTTP/1.1 only'
            cand --http3-only 'curl''s flag, refused: retry-http speaks HTTP/1.1 only'
            cand -4 'Resolve host names to IPv4 addresses only (the last of -4 and -6 counts, as in curl)'
            cand --ipv4 'Resolve host names to IPv4 addresses only (the last of -4 and -6 counts, as in curl)'
            cand -6 'Resolve host names to IPv6 addresses only (the last of -4 and -6 counts, as in curl)'
            cand --ipv6 'Resolve host names to IPv6 addresses only (the last of -4 and -6 counts, as in curl)'
            cand -O 'Write the body to a file named as the URL''s last path segment, in the current folder'
            cand --remote-name 'Write the body to a file named as the URL''s last path segment, in the current folder'
            cand --create-dirs 'Create the missing folders of the -o/-O path (--output-dir included)'
            cand -f 'curl''s --fail, accepted: it is what retry-http always does'
            cand --fail 'curl''s --fail, accepted: it is what retry-http always does'
            cand -S 'curl''s --show-error, accepted: with -s, the final error line is always shown'
            cand --show-error 'curl''s --show-error, accepted: with -s, the final error line is always shown'
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
