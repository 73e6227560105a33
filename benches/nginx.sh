# Sourced by the benchmark scripts: one nginx of the harness's own, the same in each.
#
#   start_nginx DIR ROOT    # nginx serving ROOT on a free port of 127.0.0.1, its files under
#                           # DIR; sets NGINX_PORT and NGINX_PID, returns once it answers
#
# Static files only, sendfile on, no access log, one worker; run as nobody when root (so
# ROOT and its files must be world-readable). The caller stops it (kill "$NGINX_PID").
start_nginx() {
    local dir="$1" root="$2" user=""
    mkdir -p "$dir/conf" "$dir/logs" "$dir/tmp"
    NGINX_PORT="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
    [[ "$(id -u)" == 0 ]] && user="user nobody nogroup;"
    cat >"$dir/conf/nginx.conf" <<CONF
$user
worker_processes 1;
daemon off;
pid logs/nginx.pid;
error_log logs/error.log warn;
events { worker_connections 1024; }
http {
    access_log off;
    sendfile on;
    tcp_nopush on;
    keepalive_timeout 5;
    client_body_temp_path tmp/client_body;
    proxy_temp_path tmp/proxy;
    fastcgi_temp_path tmp/fastcgi;
    uwsgi_temp_path tmp/uwsgi;
    scgi_temp_path tmp/scgi;
    default_type application/octet-stream;
    server { listen 127.0.0.1:$NGINX_PORT; server_name localhost; root $root; }
}
CONF
    nginx -p "$dir" -c conf/nginx.conf -e logs/error.log -t -q || { echo "nginx config test failed" >&2; return 1; }
    nginx -p "$dir" -c conf/nginx.conf -e logs/error.log >"$dir/nginx.out" 2>&1 &
    NGINX_PID=$!
    local _
    for _ in $(seq 100); do
        (exec 3<>"/dev/tcp/127.0.0.1/$NGINX_PORT") 2>/dev/null && return 0
        sleep 0.05
    done
    echo "nginx did not start on 127.0.0.1:$NGINX_PORT" >&2
    return 1
}
