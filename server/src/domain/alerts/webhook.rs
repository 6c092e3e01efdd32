//! Webhook deliveries: one HTTP/1.1 POST over TCP or TLS (rustls with the Mozilla roots), the body signed with
//! HMAC-SHA256 under the channel's secret in `X-Edge-Signature: sha256=<hex>`. The host is resolved here and
//! the address connected to is the one checked, so a name cannot point a webhook at the server's own network
//! (loopback, private, link-local ranges) unless the operator allows it.

use std::{net::IpAddr, sync::Arc, time::Duration};

use hmac::{Hmac, Mac};
use http_body_util::{BodyExt, Full};
use hyper::{Request, Uri, body::Bytes};
use hyper_util::rt::TokioIo;
use sha2::Sha256;
use tokio::net::TcpStream;

/// The header that carries the signature.
pub const SIGNATURE_HEADER: &str = "X-Edge-Signature";
/// How long one attempt may take, connection and answer included.
pub const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(10);

/// `sha256=<hex of HMAC-SHA256(secret, body)>`.
pub fn signature(secret: &str, body: &[u8]) -> String {
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(secret.as_bytes()).expect("HMAC takes a key of any length");
    mac.update(body);
    format!("sha256={}", hex::encode(mac.finalize().into_bytes()))
}

/// A new signing secret: 256 random bits, hex.
pub fn new_secret() -> String {
    use rand::RngCore;
    let mut bytes = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    format!("whsec_{}", hex::encode(bytes))
}

/// Checks a webhook URL as written: `http` or `https`, a host, at most 2,048 characters, no credentials.
pub fn check_url(url: &str) -> Result<(), String> {
    if url.len() > edge_api::limits::MAX_URI_CHARS {
        return Err(format!("at most {} characters", edge_api::limits::MAX_URI_CHARS));
    }
    let uri: Uri = url.parse().map_err(|_| "not a URL".to_string())?;
    match uri.scheme_str() {
        Some("http" | "https") => {}
        _ => return Err("must start with http:// or https://".into()),
    }
    let Some(authority) = uri.authority() else { return Err("has no host".into()) };
    if authority.as_str().contains('@') {
        return Err("may not carry credentials (put a token in the path or query instead)".into());
    }
    if authority.host().is_empty() {
        return Err("has no host".into());
    }
    Ok(())
}

/// Whether an address is one the server's own network uses: loopback, private, link-local, unique-local,
/// unspecified, or multicast.
pub fn internal(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_multicast()
                || v4.octets()[0] == 100 && (64..128).contains(&v4.octets()[1])
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return internal(IpAddr::V4(v4));
            }
            v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (v6.segments()[0] & 0xfe00) == 0xfc00
                || (v6.segments()[0] & 0xffc0) == 0xfe80
        }
    }
}

/// How an attempt ended: the answer's status, or why there was none (and whether trying again may help).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Attempt {
    Answered(u16),
    Failed { error: String, retry: bool },
}

fn tls_config() -> Arc<tokio_rustls::rustls::ClientConfig> {
    static CONFIG: std::sync::OnceLock<Arc<tokio_rustls::rustls::ClientConfig>> = std::sync::OnceLock::new();
    CONFIG
        .get_or_init(|| {
            let roots = tokio_rustls::rustls::RootCertStore { roots: webpki_roots::TLS_SERVER_ROOTS.to_vec() };
            let provider = Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
            let config = tokio_rustls::rustls::ClientConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .map(|b| b.with_root_certificates(roots).with_no_client_auth())
                .unwrap_or_else(|_| {
                    tokio_rustls::rustls::ClientConfig::builder()
                        .with_root_certificates(tokio_rustls::rustls::RootCertStore::empty())
                        .with_no_client_auth()
                });
            Arc::new(config)
        })
        .clone()
}

/// POSTs `body` to `url` with `headers`, within [`ATTEMPT_TIMEOUT`]. `allow_internal`: the operator allows
/// addresses of the server's own network.
pub async fn post(url: &str, headers: &[(&str, String)], body: Vec<u8>, allow_internal: bool) -> Attempt {
    match tokio::time::timeout(ATTEMPT_TIMEOUT, post_now(url, headers, body, allow_internal)).await {
        Ok(attempt) => attempt,
        Err(_) => Attempt::Failed { error: format!("no answer within {} s", ATTEMPT_TIMEOUT.as_secs()), retry: true },
    }
}

async fn post_now(url: &str, headers: &[(&str, String)], body: Vec<u8>, allow_internal: bool) -> Attempt {
    let fail = |error: String, retry: bool| Attempt::Failed { error, retry };
    let Ok(uri) = url.parse::<Uri>() else { return fail("the URL cannot be read".into(), false) };
    let https = uri.scheme_str() == Some("https");
    let Some(host) = uri.host().map(|h| h.trim_start_matches('[').trim_end_matches(']').to_string()) else {
        return fail("the URL has no host".into(), false);
    };
    let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
    let addrs = match tokio::net::lookup_host((host.as_str(), port)).await {
        Ok(addrs) => addrs.collect::<Vec<_>>(),
        Err(e) => return fail(format!("cannot resolve {host}: {e}"), true),
    };
    let Some(addr) = addrs.iter().find(|a| allow_internal || !internal(a.ip())).copied() else {
        return if addrs.is_empty() {
            fail(format!("{host} has no address"), true)
        } else {
            fail(format!("{host} is an address of the server's own network, which webhooks may not reach"), false)
        };
    };
    let tcp = match TcpStream::connect(addr).await {
        Ok(tcp) => tcp,
        Err(e) => return fail(format!("cannot connect to {addr}: {e}"), true),
    };
    let path = uri.path_and_query().map(|p| p.as_str().to_string()).unwrap_or_else(|| "/".into());
    let authority = uri.authority().map(|a| a.as_str().to_string()).unwrap_or(host.clone());
    let mut request = Request::post(path)
        .header(hyper::header::HOST, authority)
        .header(hyper::header::CONTENT_TYPE, "application/json")
        .header(hyper::header::USER_AGENT, concat!("edge-console/", env!("CARGO_PKG_VERSION")));
    for (name, value) in headers {
        request = request.header(*name, value.as_str());
    }
    let Ok(request) = request.body(Full::new(Bytes::from(body))) else {
        return fail("the request cannot be built".into(), false);
    };
    let status = if https {
        let Ok(name) = tokio_rustls::rustls::pki_types::ServerName::try_from(host.clone()) else {
            return fail(format!("{host} is not a name TLS can check"), false);
        };
        match tokio_rustls::TlsConnector::from(tls_config()).connect(name, tcp).await {
            Ok(tls) => send(TokioIo::new(tls), request).await,
            Err(e) => return fail(format!("TLS with {host} failed: {e}"), true),
        }
    } else {
        send(TokioIo::new(tcp), request).await
    };
    match status {
        Ok(status) => Attempt::Answered(status),
        Err(e) => fail(e, true),
    }
}

async fn send<T>(io: T, request: Request<Full<Bytes>>) -> Result<u16, String>
where
    T: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(io).await.map_err(|e| format!("the connection failed: {e}"))?;
    let driver = tokio::spawn(connection);
    let response = sender.send_request(request).await.map_err(|e| format!("the request failed: {e}"));
    let status = match response {
        Ok(response) => {
            let status = response.status().as_u16();
            // Read (and drop) at most a little of the answer, so the connection ends cleanly.
            let _ = tokio::time::timeout(Duration::from_secs(1), response.into_body().collect()).await;
            Ok(status)
        }
        Err(e) => Err(e),
    };
    driver.abort();
    status
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_signature_is_hmac_sha256_of_the_body_in_hex() {
        // RFC 4231, test case 2.
        assert_eq!(
            signature("Jefe", b"what do ya want for nothing?"),
            "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    #[test]
    fn urls_are_http_or_https_with_a_host_and_no_credentials() {
        assert!(check_url("https://hooks.example.com/x?y=1").is_ok());
        assert!(check_url("ftp://example.com/").is_err());
        assert!(check_url("https://user:pw@example.com/").is_err());
        assert!(check_url("not a url").is_err());
        assert!(check_url(&format!("https://example.com/{}", "a".repeat(2100))).is_err());
    }

    #[test]
    fn the_servers_own_networks_are_internal() {
        for ip in ["127.0.0.1", "10.1.2.3", "192.168.0.1", "169.254.169.254", "::1", "fd00::1", "::ffff:10.0.0.1"] {
            assert!(internal(ip.parse().unwrap()), "{ip}");
        }
        for ip in ["93.184.216.34", "2606:4700::1"] {
            assert!(!internal(ip.parse().unwrap()), "{ip}");
        }
    }
}
