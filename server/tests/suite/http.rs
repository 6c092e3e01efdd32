//! The HTTP surface around the API: JSON errors everywhere, static files with the client-route fallback,
//! health check and the OpenAPI document.

use crate::common;

use axum::http::{Method, StatusCode, header};
use common::*;

#[tokio::test]
async fn unknown_api_paths_and_versions_answer_json_404_never_the_console() {
    let app = TestApp::new().await;
    for path in ["/acme/v1/nothing-here", "/acme/v2/sessions", "/acme/v1", "/nosuch/v1/sessions/current/x"] {
        let reply = app.send(req(Method::GET, path).done()).await;
        assert_error(&reply, StatusCode::NOT_FOUND, "not_found");
    }
}

#[tokio::test]
async fn a_wrong_method_answers_405_json_with_allow() {
    let app = TestApp::new().await;
    let reply = app.send(req(Method::PATCH, "/acme/v1/sessions/current").done()).await;
    assert_error(&reply, StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed");
    assert_eq!(reply.headers.get(header::ALLOW).unwrap(), "GET,HEAD,PUT,DELETE");
}

#[tokio::test]
async fn a_body_over_the_limit_answers_413_json() {
    let app = TestApp::new().await;
    let id = app.login("acme", "alice", PASSWORD).await;
    let big = format!("{{\"id\": \"{}\"}}", "x".repeat(11 * 1024 * 1024));
    let reply =
        app.send(req(Method::PUT, "/acme/v1/sessions/current").cookie(&id).raw("application/json", big).done()).await;
    assert_error(&reply, StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large");
}

#[tokio::test]
async fn a_body_that_is_not_json_answers_415_json() {
    let app = TestApp::new().await;
    let id = app.login("acme", "alice", PASSWORD).await;
    let reply =
        app.send(req(Method::PUT, "/acme/v1/sessions/current").cookie(&id).raw("text/plain", "hi").done()).await;
    assert_error(&reply, StatusCode::UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type");
}

#[tokio::test]
async fn api_answers_are_not_cached_and_carry_security_headers() {
    let app = TestApp::new().await;
    let reply = app.send(req(Method::POST, "/acme/v1/sessions").basic("alice", PASSWORD).done()).await;
    assert_eq!(reply.headers.get(header::CACHE_CONTROL).unwrap(), "no-store");
    assert_eq!(reply.headers.get(header::X_CONTENT_TYPE_OPTIONS).unwrap(), "nosniff");
    assert_eq!(reply.headers.get(header::REFERRER_POLICY).unwrap(), "no-referrer");
    assert_eq!(reply.headers.get("x-frame-options").unwrap(), "DENY");
    assert_eq!(reply.headers.get("cross-origin-opener-policy").unwrap(), "same-origin");
    assert_eq!(reply.headers.get("cross-origin-resource-policy").unwrap(), "same-origin");
    assert!(reply.headers.get("permissions-policy").unwrap().to_str().unwrap().contains("camera=()"));
    assert!(reply.headers.get(header::STRICT_TRANSPORT_SECURITY).is_none(), "not over TLS");
    // Behind a TLS-terminating proxy: HTTPS only from now on, for the console's pages too.
    for path in ["/acme/v1/sessions/current", "/login"] {
        let reply = app.send(req(Method::GET, path).header("x-forwarded-proto", "https").done()).await;
        assert_eq!(reply.headers.get(header::STRICT_TRANSPORT_SECURITY).unwrap(), "max-age=31536000", "{path}");
    }
}

#[tokio::test]
async fn client_routes_get_the_console_and_assets_are_served_with_long_caching() {
    let app = TestApp::new().await;
    for path in ["/", "/login", "/acme/stats", "/acme/users/123"] {
        let reply = app.send(req(Method::GET, path).done()).await;
        assert_eq!(reply.status, StatusCode::OK, "{path}");
        assert!(String::from_utf8_lossy(&reply.raw).contains("<title>Edge Console</title>"), "{path}");
        assert_eq!(reply.headers.get(header::CACHE_CONTROL).unwrap(), "no-cache", "{path}");
    }
    let reply = app.send(req(Method::GET, "/app-1234.js").done()).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.raw, b"console.log(1)");
    assert_eq!(reply.headers.get(header::CACHE_CONTROL).unwrap(), "public, max-age=31536000, immutable");
}

#[tokio::test]
async fn console_files_are_sent_precompressed_as_the_browser_accepts_them() {
    let app = TestApp::new().await;
    let dist = app.dir.path().join("dist");
    // What `cargo xtask build` writes beside each file: brotli and gzip copies.
    std::fs::write(dist.join("app-1234.js.br"), b"BROTLI").unwrap();
    std::fs::write(dist.join("app-1234.js.gz"), b"GZIP").unwrap();
    std::fs::write(dist.join("index.html.br"), b"INDEX-BROTLI").unwrap();
    let get = |path: &'static str, accept: Option<&'static str>| {
        let mut r = req(Method::GET, path);
        if let Some(accept) = accept {
            r = r.header("accept-encoding", accept);
        }
        app.send(r.done())
    };
    for (accept, encoding, body) in [
        (Some("gzip, deflate, br"), Some("br"), &b"BROTLI"[..]),
        (Some("gzip"), Some("gzip"), b"GZIP"),
        (Some("identity"), None, b"console.log(1)"),
        (None, None, b"console.log(1)"),
    ] {
        let reply = get("/app-1234.js", accept).await;
        assert_eq!(reply.status, StatusCode::OK, "{accept:?}");
        assert_eq!(reply.raw, body, "{accept:?}");
        assert_eq!(reply.headers.get(header::CONTENT_ENCODING).map(|v| v.to_str().unwrap()), encoding, "{accept:?}");
        assert_eq!(reply.headers.get(header::CONTENT_TYPE).unwrap(), "text/javascript", "{accept:?}");
        // Caches keep one copy per encoding; the hashed file stays cached for good in each.
        assert_eq!(reply.headers.get(header::VARY).unwrap(), "accept-encoding", "{accept:?}");
        assert_eq!(reply.headers.get(header::CACHE_CONTROL).unwrap(), "public, max-age=31536000, immutable");
    }
    // index.html, also as the answer to a client route, is compressed too and always revalidated.
    for path in ["/", "/acme/stats"] {
        let reply = get(path, Some("br")).await;
        assert_eq!(reply.raw, b"INDEX-BROTLI", "{path}");
        assert_eq!(reply.headers.get(header::CONTENT_ENCODING).unwrap(), "br", "{path}");
        assert_eq!(reply.headers.get(header::VARY).unwrap(), "accept-encoding", "{path}");
        assert_eq!(reply.headers.get(header::CACHE_CONTROL).unwrap(), "no-cache", "{path}");
    }
    // An API answer is not a static file: no Vary from here.
    let reply = get("/acme/v1/nothing", Some("br")).await;
    assert_eq!(reply.status, StatusCode::NOT_FOUND);
    assert!(reply.headers.get(header::CONTENT_ENCODING).is_none());
}

#[tokio::test]
async fn the_first_view_is_the_small_sign_in_app_and_the_console_everything_else() {
    let app = TestApp::new().await;
    let signin = app.dir.path().join("dist/signin");
    std::fs::create_dir_all(&signin).unwrap();
    std::fs::write(signin.join("index.html"), "<title>Sign in</title>").unwrap();
    std::fs::write(signin.join("index.html.br"), "SIGNIN-BROTLI").unwrap();
    for path in ["/", "/login", "/login?customer=acme&reason=expired", "/reset-password?customer=acme&token=t"] {
        let reply = app.send(req(Method::GET, path).done()).await;
        assert_eq!(reply.status, StatusCode::OK, "{path}");
        assert_eq!(reply.raw, b"<title>Sign in</title>", "{path}");
        assert_eq!(reply.headers.get(header::CACHE_CONTROL).unwrap(), "no-cache", "{path}");
        let reply = app.send(req(Method::GET, path).header("accept-encoding", "br").done()).await;
        assert_eq!(reply.raw, b"SIGNIN-BROTLI", "{path}");
    }
    for path in ["/acme/stats", "/acme/users", "/index.html"] {
        let reply = app.send(req(Method::GET, path).done()).await;
        assert!(String::from_utf8_lossy(&reply.raw).contains("<title>Edge Console</title>"), "{path}");
    }
}

#[tokio::test]
async fn static_files_cannot_escape_the_static_dir() {
    let app = TestApp::new().await;
    std::fs::write(app.dir.path().join("secret.txt"), "secret").unwrap();
    let reply = app.send(req(Method::GET, "/../secret.txt").done()).await;
    assert!(!String::from_utf8_lossy(&reply.raw).contains("secret"));
    let reply = app.send(req(Method::GET, "/%2e%2e/secret.txt").done()).await;
    assert!(!String::from_utf8_lossy(&reply.raw).contains("secret"));
}

#[tokio::test]
async fn healthz_answers_200() {
    let app = TestApp::new().await;
    let reply = app.send(req(Method::GET, "/healthz").done()).await;
    assert_eq!(reply.status, StatusCode::OK);
    assert_eq!(reply.body["status"], "ok");
}

#[tokio::test]
async fn openapi_documents_every_session_operation_with_the_customer_parameter() {
    let app = TestApp::new().await;
    let reply = app.send(req(Method::GET, "/openapi.json").done()).await;
    assert_eq!(reply.status, StatusCode::OK);
    let paths = reply.body["paths"].as_object().unwrap();
    let expected = [
        ("/{customer}/v1/sessions", vec!["post", "get"]),
        ("/{customer}/v1/sessions/refs/{ref}", vec!["delete"]),
        ("/{customer}/v1/sessions/current", vec!["get", "put", "delete"]),
        ("/{customer}/v1/sessions/{session_id}", vec!["get", "put", "delete"]),
    ];
    for (path, methods) in expected {
        for method in methods {
            let op = &paths[path][method];
            assert!(op.is_object(), "{method} {path} documented");
            let params = op["parameters"].as_array().unwrap();
            assert!(params.iter().any(|p| p["name"] == "customer" && p["in"] == "path"), "{method} {path}");
        }
    }
}

#[tokio::test]
async fn changes_with_the_session_cookie_must_come_from_the_consoles_origin() {
    let app = TestApp::new().await;
    let id = app.login("acme", "alice", PASSWORD).await;
    let keep_alive = |origin: Option<&str>, site: Option<&str>| {
        let mut r =
            req(Method::PUT, &format!("/acme/v1/sessions/{id}")).cookie(&id).header("host", "console.example:8443");
        if let Some(o) = origin {
            r = r.header("origin", o);
        }
        if let Some(s) = site {
            r = r.header("sec-fetch-site", s);
        }
        r.done()
    };
    assert_eq!(
        app.send(keep_alive(Some("https://console.example:8443"), Some("same-origin"))).await.status,
        StatusCode::OK
    );
    assert_eq!(app.send(keep_alive(None, None)).await.status, StatusCode::OK, "non-browser clients send no Origin");
    for (origin, site) in [(Some("https://evil.example"), None), (Some("null"), None), (None, Some("cross-site"))] {
        let reply = app.send(keep_alive(origin, site)).await;
        assert_error(&reply, StatusCode::FORBIDDEN, "forbidden");
        assert!(reply.body["message"].as_str().unwrap().contains("console's own origin"));
    }
    // Reading is not refused, and neither are Basic credentials (a browser does not send them by itself).
    let reply = app
        .send(
            req(Method::GET, &format!("/acme/v1/sessions/{id}"))
                .cookie(&id)
                .header("origin", "https://evil.example")
                .done(),
        )
        .await;
    assert_eq!(reply.status, StatusCode::OK);
    let reply = app
        .send(
            req(Method::PUT, "/acme/v1/account")
                .basic("alice", PASSWORD)
                .header("origin", "https://evil.example")
                .json(&serde_json::json!({"display_name": "x"}))
                .done(),
        )
        .await;
    assert_eq!(reply.status, StatusCode::OK);
}

#[tokio::test]
async fn the_console_is_served_with_a_content_security_policy_that_admits_only_its_own_code() {
    let app = TestApp::new().await;
    let reply = app.send(req(Method::GET, "/acme/stats").done()).await;
    let csp = reply.headers.get(header::CONTENT_SECURITY_POLICY).unwrap().to_str().unwrap();
    for part in
        ["default-src 'self'", "script-src 'self' 'wasm-unsafe-eval'", "frame-ancestors 'none'", "object-src 'none'"]
    {
        assert!(csp.contains(part), "{csp}");
    }
}

#[test]
fn the_policy_admits_trunks_inline_loaders_by_their_hashes() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("index.html"),
        "<html><script type=\"module\">import init from '/a.js';\n</script></html>",
    )
    .unwrap();
    std::fs::create_dir_all(dir.path().join("signin")).unwrap();
    std::fs::write(
        dir.path().join("signin/index.html"),
        "<html><script type=\"module\">import init from '/signin/b.js';\n</script></html>",
    )
    .unwrap();
    let csp = edge_server::web::content_security_policy(dir.path());
    use base64::Engine;
    use sha2::Digest;
    // sha256 of each loader, base64: the console's and the sign-in app's.
    for script in [&b"import init from '/a.js';\n"[..], b"import init from '/signin/b.js';\n"] {
        let expected = base64::engine::general_purpose::STANDARD.encode(sha2::Sha256::digest(script));
        assert!(csp.contains(&format!("'sha256-{expected}'")), "{csp}");
    }
}

#[tokio::test]
async fn hostile_bodies_get_a_clear_400_and_change_nothing() {
    let app = TestApp::new().await;
    let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    let mut not_utf8 = b"{\"username\":\"".to_vec();
    not_utf8.extend([0xff, 0xfe, b'"', b'}']);
    for body in [deep.into_bytes(), not_utf8, b"{\"username\": \"x\", \"username\": ".to_vec()] {
        let reply = app
            .send(req(Method::POST, "/acme/v1/users").basic("alice", PASSWORD).raw("application/json", body).done())
            .await;
        assert_error(&reply, StatusCode::BAD_REQUEST, "invalid_json");
    }
    let reply = app.send(req(Method::GET, "/acme/v1/users").basic("alice", PASSWORD).done()).await;
    assert_eq!(reply.body["total"], 1, "nothing was created");
    // A cookie with odd characters is just an unknown session.
    let reply =
        app.send(req(Method::GET, "/acme/v1/users").header("cookie", "authtoken=\"><script>; other=1").done()).await;
    assert_error(&reply, StatusCode::UNAUTHORIZED, "session_invalid");
}

async fn boom() -> &'static str {
    panic!("a bug")
}

#[tokio::test]
async fn a_handler_that_panics_answers_500_json_and_the_server_goes_on() {
    use axum::{Router, body::Body, routing::get};
    use tower::ServiceExt;

    let panicking = Router::new()
        .route("/acme/v1/boom", get(boom))
        .route("/acme/v1/cache/purge", get(boom))
        .route("/acme/v1/fine", get(|| async { "fine" }));
    let router = edge_server::api_middleware(panicking, 1024);
    let send = |path: &'static str| {
        let router = router.clone();
        async move {
            let res = router.oneshot(axum::http::Request::get(path).body(Body::empty()).unwrap()).await.unwrap();
            let status = res.status();
            let bytes = http_body_util::BodyExt::collect(res.into_body()).await.unwrap().to_bytes();
            (status, serde_json::from_slice::<serde_json::Value>(&bytes).unwrap_or_default())
        }
    };
    let (status, body) = send("/acme/v1/boom").await;
    assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(body["type"], "internal_error", "{body}");
    let (status, body) = send("/acme/v1/cache/purge").await;
    assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(body["code"], 503, "purge keeps its own body: {body}");
    assert_eq!(send("/acme/v1/fine").await.0, StatusCode::OK);
}

/// The narrowed parameter schemas say exactly what the handlers accept: every listed category answers, an
/// unlisted one is 404; paging bounds are the handlers' bounds.
#[tokio::test]
async fn openapi_parameter_schemas_match_what_the_handlers_accept() {
    let app = TestApp::new().await;
    let doc = app.send(req(Method::GET, "/openapi.json").done()).await.body;
    let param = |path: &str, name: &str| -> serde_json::Value {
        let op = &doc["paths"][path]["get"];
        let found = op["parameters"].as_array().unwrap().iter().find(|p| p["name"] == name).cloned();
        found.unwrap_or_else(|| panic!("{path} documents {name}"))["schema"].clone()
    };
    for family in ["waf", "trafficshaping"] {
        let path = format!("/{{customer}}/v1/stats/security/{family}/topk/{{category}}/dimensions");
        let categories = param(&path, "category")["enum"].as_array().unwrap().clone();
        assert!(categories.len() >= 3, "{family}: {categories:?}");
        for c in categories {
            let uri = format!("/acme/v1/stats/security/{family}/topk/{}/dimensions", c.as_str().unwrap());
            let reply = app.send(req(Method::GET, &uri).basic("alice", PASSWORD).done()).await;
            assert_eq!(reply.status, StatusCode::OK, "{uri}: {}", reply.body);
        }
        let uri = format!("/acme/v1/stats/security/{family}/topk/nosuch/dimensions");
        assert_error(
            &app.send(req(Method::GET, &uri).basic("alice", PASSWORD).done()).await,
            StatusCode::NOT_FOUND,
            "not_found",
        );
    }
    let data = "/{customer}/v1/stats/data";
    assert_eq!(param(data, "granularity")["enum"], serde_json::json!(["5minute", "hour", "day"]));
    assert!(param(data, "starttime")["pattern"].as_str().unwrap().contains("-02-29"), "leap days are stated");
    assert!(param(data, "metrics")["pattern"].as_str().unwrap().contains("hits"));
    let users = "/{customer}/v1/users";
    assert_eq!(
        (param(users, "count")["minimum"].as_f64(), param(users, "count")["maximum"].as_f64()),
        (Some(1.0), Some(1000.0))
    );
    for (query, status) in
        [("count=1000", StatusCode::OK), ("count=1001", StatusCode::BAD_REQUEST), ("page=0", StatusCode::BAD_REQUEST)]
    {
        let reply =
            app.send(req(Method::GET, &format!("/acme/v1/users?{query}")).basic("alice", PASSWORD).done()).await;
        assert_eq!(reply.status, status, "{query}: {}", reply.body);
    }
}
