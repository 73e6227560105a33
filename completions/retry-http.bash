_retry__http() {
    local i cur prev opts cmd
    COMPREPLY=()
    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
        cur="$2"
    else
        cur="${COMP_WORDS[COMP_CWORD]}"
    fi
    prev="$3"
    cmd=""
    opts=""

    for i in "${COMP_WORDS[@]:0:COMP_CWORD}"
    do
        case "${cmd},${i}" in
            ",$1")
                cmd="retry__http"
                ;;
            retry__http,demo)
                cmd="retry__http__subcmd__demo"
                ;;
            retry__http,help)
                cmd="retry__http__subcmd__help"
                ;;
            retry__http,simulate)
                cmd="retry__http__subcmd__simulate"
                ;;
            retry__http__subcmd__help,demo)
                cmd="retry__http__subcmd__help__subcmd__demo"
                ;;
            retry__http__subcmd__help,help)
                cmd="retry__http__subcmd__help__subcmd__help"
                ;;
            retry__http__subcmd__help,simulate)
                cmd="retry__http__subcmd__help__subcmd__simulate"
                ;;
            *)
                ;;
        esac
    done

    case "${cmd}" in
        retry__http)
            opts="-X -H -d -u -A -L -I -x -k -G -F -K -m -o -i -D -N -w -Z -s -v -E -n -Y -y -C -R -z -b -e -4 -6 -O -f -S -T -g -q -p -# -h -V --request --header --data --data-binary --json --user --user-agent --location --max-redirs --head --proxy --noproxy --insecure --cacert --compressed --get --data-urlencode --form --config --attempts --base --cap --jitter --deadline --splay --retry-on --max-retry-after --retry-after-spread --timeout --max-time --connect-timeout --stall-timeout --seed --idempotency-key --retry-unsafe --explain --until-status --until-body --until-json --until-header --state --state-timeout --state-on-error --state-cacert --breaker-threshold --breaker-cooldown --retry-budget --budget-window --budget-floor --state-ttl --output --include --dump-header --fail-with-body --no-buffer --max-filesize --write-out --health-exit --exit-codes --parallel --parallel-max --parallel-max-host --fail-early --rate --parallel-immediate --silent --verbose --log-format --color --retry --retry-delay --retry-max-time --retry-connrefused --retry-all-errors --resolve --connect-to --unix-socket --cert --key --cert-type --netrc --netrc-file --netrc-optional --speed-limit --speed-time --continue-at --remote-time --etag-save --etag-compare --time-cond --cookie --url --referer --http1.1 --http2 --http3 --ipv4 --ipv6 --remote-name --remote-name-all --output-dir --create-dirs --fail --show-error --upload-file --data-raw --oauth2-bearer --proto --proto-redir --tlsv1.2 --tlsv1.3 --tls-max --globoff --disable --basic --proxytunnel --remove-on-error --no-styled-output --tcp-nodelay --tcp-fastopen --no-keepalive --keepalive-time --progress-bar --no-progress-meter --help --version demo simulate help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 1 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --request)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -X)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --header)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -H)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --data)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -d)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --data-binary)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --json)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --user)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -u)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --user-agent)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -A)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-redirs)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --proxy)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -x)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --noproxy)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --cacert)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --data-urlencode)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --form)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -F)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --config)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -K)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --attempts)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --base)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --cap)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --jitter)
                    COMPREPLY=($(compgen -W "full equal decorrelated none" -- "${cur}"))
                    return 0
                    ;;
                --deadline)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --splay)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --retry-on)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-retry-after)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --retry-after-spread)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-time)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -m)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --connect-timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --stall-timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --seed)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --idempotency-key)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --until-status)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --until-body)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --until-json)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --until-header)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --state)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --state-timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --state-on-error)
                    COMPREPLY=($(compgen -W "open closed" -- "${cur}"))
                    return 0
                    ;;
                --state-cacert)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --breaker-threshold)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --breaker-cooldown)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --retry-budget)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --budget-window)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --budget-floor)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --state-ttl)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --output)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -o)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --dump-header)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -D)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-filesize)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --write-out)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -w)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --exit-codes)
                    COMPREPLY=($(compgen -W "retry-http curl" -- "${cur}"))
                    return 0
                    ;;
                --parallel-max)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --parallel-max-host)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --rate)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --log-format)
                    COMPREPLY=($(compgen -W "text json" -- "${cur}"))
                    return 0
                    ;;
                --color)
                    COMPREPLY=($(compgen -W "auto always never" -- "${cur}"))
                    return 0
                    ;;
                --retry)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --retry-delay)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --retry-max-time)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --resolve)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --connect-to)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --unix-socket)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --cert)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -E)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --key)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --cert-type)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --netrc-file)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --speed-limit)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -Y)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --speed-time)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -y)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --continue-at)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -C)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --etag-save)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --etag-compare)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --time-cond)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -z)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --cookie)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -b)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -c)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --url)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --referer)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -e)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --output-dir)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --upload-file)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -T)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --data-raw)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --oauth2-bearer)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --proto)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --proto-redir)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --tls-max)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --keepalive-time)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        retry__http__subcmd__demo)
            opts="-h --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        retry__http__subcmd__help)
            opts="demo simulate help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        retry__http__subcmd__help__subcmd__demo)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        retry__http__subcmd__help__subcmd__help)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        retry__http__subcmd__help__subcmd__simulate)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        retry__http__subcmd__simulate)
            opts="-h --model --clients --attempts --base --cap --seed --runs --strategies --format --plot --sweep --outage --capacity --window --deadline --search --retry-budget --budget-floor --breaker-threshold --population --spike-rate --trigger-at --trigger-for --capacity-drop --timeout --per-request --network --base-rate --duration --latency --failure-rate --splay --period --store-ops --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --model)
                    COMPREPLY=($(compgen -W "outage overload failure-rate cron limiter" -- "${cur}"))
                    return 0
                    ;;
                --clients)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --attempts)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --base)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --cap)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --seed)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --runs)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --strategies)
                    COMPREPLY=($(compgen -W "fixed exponential full equal decorrelated no-retry retries bucket breaker shared-budget shared-breaker" -- "${cur}"))
                    return 0
                    ;;
                --format)
                    COMPREPLY=($(compgen -W "table json" -- "${cur}"))
                    return 0
                    ;;
                --plot)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --outage)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --capacity)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --window)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --deadline)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --retry-budget)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --budget-floor)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --breaker-threshold)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --population)
                    COMPREPLY=($(compgen -W "open closed" -- "${cur}"))
                    return 0
                    ;;
                --spike-rate)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --trigger-at)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --trigger-for)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --capacity-drop)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --per-request)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --network)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --base-rate)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --duration)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --latency)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --failure-rate)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --splay)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --period)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --store-ops)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
    esac
}

if [[ "${BASH_VERSINFO[0]}" -eq 4 && "${BASH_VERSINFO[1]}" -ge 4 || "${BASH_VERSINFO[0]}" -gt 4 ]]; then
    complete -F _retry__http -o nosort -o bashdefault -o default retry-http
else
    complete -F _retry__http -o bashdefault -o default retry-http
fi
