
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
            cand --idempotency-key 'Send this Idempotency-Key on every attempt (auto: a random UUID); allows replaying POST'
            cand --state 'Share a circuit breaker and a retry budget per target with other runs through FILE'
            cand --breaker-threshold 'With --state: consecutive failed runs (exit 4, 5, 6) that open the circuit'
            cand --breaker-cooldown 'With --state: how long an open circuit refuses (exit 7) before one run probes'
            cand --retry-budget 'With --state: retries allowed, as a percentage of successful requests in the window (0% and above: over 100% allows more retries than successes)'
            cand --budget-window 'With --state: the sliding window of the retry budget (at least 1s)'
            cand --budget-floor 'With --state: retries always allowed per window, so a quiet job can still retry'
            cand --state-ttl 'With --state: a target with no run for this long is forgotten, unless its circuit is open'
            cand -o 'Write the body to FILE (renamed into place only when complete and successful)'
            cand --output 'Write the body to FILE (renamed into place only when complete and successful)'
            cand -D 'Write the final response''s status line and headers to FILE (''-'' for stdout)'
            cand --dump-header 'Write the final response''s status line and headers to FILE (''-'' for stdout)'
            cand --max-filesize 'Fail (exit 6) when the body is larger than SIZE bytes (k, M, G suffixes)'
            cand -w 'After the run, print FORMAT on stdout: %{http_code} %{num_retries} %{time_total} %{url_effective} %{exitcode} %{size_download}, and \n for a newline; @FILE reads it'
            cand --write-out 'After the run, print FORMAT on stdout: %{http_code} %{num_retries} %{time_total} %{url_effective} %{exitcode} %{size_download}, and \n for a newline; @FILE reads it'
            cand --log-format 'Format of the stderr log'
            cand --color 'Colour on stderr (auto: on a terminal, honouring NO_COLOR and CLICOLOR_FORCE)'
            cand --retry 'curl''s flag, answered with this tool''s equivalent'
            cand --retry-delay 'curl''s flag, answered with this tool''s equivalent'
            cand --retry-max-time 'curl''s flag, answered with this tool''s equivalent'
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
            cand --retry-connrefused 'curl''s flag, answered with this tool''s equivalent'
            cand --retry-all-errors 'curl''s flag, answered with this tool''s equivalent'
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
