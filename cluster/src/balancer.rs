//! A load balancer in front of the replicas: Debian's HAProxy (preferred) or nginx, round-robin, with a config
//! of its own in a directory of its own, in the foreground as our child.

use std::{
    net::SocketAddr,
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::Duration,
};

use anyhow::{Context, Result, bail};

use crate::wait_for_port;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BalancerKind {
    Haproxy,
    Nginx,
}

/// HAProxy's own answers, as JSON error bodies (the files shipped in deploy/haproxy/ for operators): 502 when
/// a replica failed to answer, 503 when no replica can take the request (all down or not ready), 504 when one
/// did not answer in time.
pub const HAPROXY_ERROR_FILES: [(u16, &str); 3] = [
    (502, include_str!("../../deploy/haproxy/edge-502.http")),
    (503, include_str!("../../deploy/haproxy/edge-503.http")),
    (504, include_str!("../../deploy/haproxy/edge-504.http")),
];

/// The JSON error body a balancer answers with when no replica can take a request: the 503 file's body.
fn unavailable_body() -> &'static str {
    let file = HAPROXY_ERROR_FILES[1].1;
    file.split_once("\r\n\r\n").map_or(file, |(_, body)| body)
}

impl BalancerKind {
    pub fn name(self) -> &'static str {
        match self {
            BalancerKind::Haproxy => "haproxy",
            BalancerKind::Nginx => "nginx",
        }
    }

    /// The installed balancer to use: `$EDGE_BALANCER` (`haproxy` or `nginx`) when set, otherwise HAProxy when
    /// installed, otherwise nginx; with the path of its program.
    pub fn find() -> Option<(BalancerKind, PathBuf)> {
        let wanted = std::env::var("EDGE_BALANCER").ok();
        [BalancerKind::Haproxy, BalancerKind::Nginx]
            .into_iter()
            .filter(|k| wanted.as_deref().is_none_or(|w| w == k.name()))
            .find_map(|k| which(k.name()).map(|path| (k, path)))
    }
}

/// `program` in /usr/sbin, /usr/bin or on PATH.
fn which(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    ["/usr/sbin", "/usr/bin", "/usr/local/sbin"]
        .into_iter()
        .map(PathBuf::from)
        .chain(std::env::split_paths(&path))
        .map(|dir| dir.join(program))
        .find(|p| p.is_file())
}

/// An HAProxy config: round-robin over `backends` (loopback ports), each checked on `/readyz` every second
/// (out after two failures, back after two successes), the client's address in `X-Forwarded-For`, a request
/// that found a connection refused or closed without an answer retried on another replica, and the JSON error
/// files in `dir` (`edge-502.http`, …) for HAProxy's own answers.
pub fn haproxy_config(listen: SocketAddr, backends: &[u16], dir: &Path) -> String {
    let mut servers = String::new();
    for (i, port) in backends.iter().enumerate() {
        servers.push_str(&format!("    server replica{i} 127.0.0.1:{port} check\n"));
    }
    format!(
        "global
    maxconn 4096

defaults
    mode http
    option forwardfor
    option redispatch
    retries 2
    retry-on conn-failure empty-response
    timeout connect 2s
    timeout client 2m
    timeout server 2m
    errorfile 502 {dir}/edge-502.http
    errorfile 503 {dir}/edge-503.http
    errorfile 504 {dir}/edge-504.http

frontend console
    bind {listen}
    default_backend replicas

backend replicas
    balance roundrobin
    option httpchk GET /readyz
    http-check expect status 200
    default-server inter 1s fall 2 rise 2
{servers}",
        dir = dir.display()
    )
}

/// An nginx config: round-robin over `backends`, a replica that fails taken out for a while (nginx has no
/// active checks), the client's address in `X-Forwarded-For`, the JSON error body when no replica answers, and
/// every file nginx writes under `dir`.
pub fn nginx_config(listen: SocketAddr, backends: &[u16], dir: &Path) -> String {
    let mut servers = String::new();
    for port in backends {
        servers.push_str(&format!("        server 127.0.0.1:{port} max_fails=1 fail_timeout=2s;\n"));
    }
    let d = dir.display();
    let unavailable = unavailable_body();
    format!(
        "daemon off;
worker_processes 1;
pid {d}/nginx.pid;
error_log {d}/error.log warn;
events {{ worker_connections 1024; }}
http {{
    access_log off;
    client_body_temp_path {d}/client_body;
    proxy_temp_path {d}/proxy;
    fastcgi_temp_path {d}/fastcgi;
    uwsgi_temp_path {d}/uwsgi;
    scgi_temp_path {d}/scgi;
    upstream replicas {{
{servers}        keepalive 32;
    }}
    server {{
        listen {listen};
        client_max_body_size 64m;
        location / {{
            proxy_pass http://replicas;
            proxy_http_version 1.1;
            proxy_set_header Connection \"\";
            proxy_set_header Host $http_host;
            proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
            proxy_next_upstream error timeout http_502;
            proxy_intercept_errors off;
            error_page 502 504 = @unavailable;
        }}
        location @unavailable {{
            default_type application/json;
            add_header Retry-After 2 always;
            return 503 '{unavailable}';
        }}
    }}
}}
"
    )
}

pub struct Balancer {
    child: Child,
    pub kind: BalancerKind,
    pub listen: SocketAddr,
}

impl Balancer {
    /// Starts the installed balancer on `listen` in front of `backends` (loopback ports), its files in `dir`.
    pub fn start(dir: &Path, listen: SocketAddr, backends: &[u16]) -> Result<Balancer> {
        let (kind, program) = BalancerKind::find()
            .context("no load balancer: install haproxy or nginx (apt-get install haproxy; `cargo xtask test` does)")?;
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let dir = dir.canonicalize()?;
        let mut cmd = Command::new(&program);
        match kind {
            BalancerKind::Haproxy => {
                for (status, file) in HAPROXY_ERROR_FILES {
                    std::fs::write(dir.join(format!("edge-{status}.http")), file)?;
                }
                let config = dir.join("haproxy.cfg");
                std::fs::write(&config, haproxy_config(listen, backends, &dir))?;
                cmd.arg("-db").arg("-f").arg(&config);
            }
            BalancerKind::Nginx => {
                let config = dir.join("nginx.conf");
                std::fs::write(&config, nginx_config(listen, backends, &dir))?;
                cmd.arg("-e").arg(dir.join("error.log")).arg("-p").arg(&dir).arg("-c").arg(&config);
            }
        }
        let log = std::fs::File::create(dir.join("balancer.log"))?;
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .with_context(|| format!("starting {}", program.display()))?;
        crate::watch_child(&mut child, kind.name())?;
        let mut balancer = Balancer { child, kind, listen };
        if let Err(e) = wait_for_port(listen.port(), Duration::from_secs(20), kind.name()) {
            let log = std::fs::read_to_string(dir.join("balancer.log")).unwrap_or_default();
            let _ = balancer.child.kill();
            bail!("{e}: {log}");
        }
        Ok(balancer)
    }

    /// `http://ADDR`
    pub fn url(&self) -> String {
        format!("http://{}", self.listen)
    }
}

impl Drop for Balancer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
