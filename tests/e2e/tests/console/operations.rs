//! Operations through the real console: concurrent configuration edits resolved on the merge screen, a malformed
//! configuration described in words, a purge followed to 100 % and named in Tasks, network list entries added by
//! paste with a validation report, where a list is used.

use edge_e2e::{Harness, PASSWORD};

const SHOP: &str = "/demo/properties?name=www-shop";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_sessions_edit_one_config_and_the_conflict_is_resolved_on_the_merge_screen() -> anyhow::Result<()> {
    let mut h = Harness::start().await?;
    let b = h.second_browser().await?;
    h.login_as("admin", PASSWORD).await?;
    b.login_as("operator", PASSWORD).await?;
    let ttl = "div[data-section='Cache rules'] tbody tr:nth-child(1) input[aria-label='TTL seconds']";
    let waf_name = "div[data-section='WAF rules'] tbody tr:nth-child(1) input[aria-label='Name']";
    let origin_name = "div[data-section='Origins'] tbody tr:nth-child(2) input[aria-label='Name']";
    for browser in [&*h, &b] {
        browser.goto(SHOP).await?;
        browser.wait_for(ttl).await?;
    }
    h.snapshot("property-editor").await?;

    // The administrator saves first: a TTL and a WAF rule's name.
    h.fill(ttl, "111").await?;
    h.fill(waf_name, "SQL injection (tuned)").await?;
    h.click("#save-config").await?;
    h.click("#confirm-save").await?;
    h.wait_until("#save-notice", |t| t.starts_with("Saved as version 2")).await?;

    // The operator, still on version 1, changes the same TTL and an origin's name.
    b.fill(ttl, "222").await?;
    b.fill(origin_name, "shop-fallback-us").await?;
    b.click("#save-config").await?;
    b.click("#confirm-save").await?;
    b.wait_for("#merge-screen").await?;
    let conflicts = b.client.find_all(fantoccini::Locator::Css("#merge-screen table.conflicts tbody tr")).await?;
    assert_eq!(conflicts.len(), 1, "only the TTL conflicts; the other changes merge by themselves");
    let path = conflicts[0].attr("data-path").await?.unwrap_or_default();
    assert!(path.starts_with("$.cache_rules[id=") && path.ends_with("].ttl_seconds"), "{path}");
    b.snapshot("merge-screen").await?;
    b.click("#save-merged").await?;
    b.click("#confirm-save").await?;
    b.wait_until("#save-notice", |t| t.starts_with("Saved as version 3")).await?;

    // Version 3 holds the operator's TTL (mine, chosen), the operator's origin name and the admin's WAF name.
    h.goto(SHOP).await?;
    h.wait_for(ttl).await?;
    assert_eq!(value(&h, ttl).await?, "222");
    assert_eq!(value(&h, waf_name).await?, "SQL injection (tuned)");
    assert_eq!(value(&h, origin_name).await?, "shop-fallback-us");
    h.stop().await
}

async fn value(b: &edge_e2e::Browser, css: &str) -> anyhow::Result<String> {
    Ok(b.wait_for(css).await?.prop("value").await?.unwrap_or_default())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_purge_is_checked_line_by_line_and_its_progress_reaches_100_percent() -> anyhow::Result<()> {
    let h = Harness::start().await?;
    h.login_as("operator", PASSWORD).await?;
    h.goto("/demo/purge").await?;
    h.fill("textarea[name=uris]", "www.shop.example/index.html\nevil.example/x.png").await?;
    h.wait_until("#purge-report", |t| {
        t.contains("2 line(s), 1 with problems") && t.contains("Line 2: no property serves the domain evil.example")
    })
    .await?;
    let disabled = h.wait_for("#purge-form button[type=submit]").await?.prop("disabled").await?;
    assert_eq!(disabled.as_deref(), Some("true"), "nothing is sent while a line has problems");
    h.fill("textarea[name=uris]", "www.shop.example/index.html\nwww.shop.example/img/logo.png").await?;
    h.wait_until("#purge-report", |t| t.contains("2 line(s), 0 with problems")).await?;
    h.click("#purge-form button[type=submit]").await?;
    // A confirmation names how many URIs on which hosts; Cancel has the focus.
    h.wait_until("dialog[open]", |t| t.contains("2 URI(s) on 1 host(s)") && t.contains("www.shop.example")).await?;
    h.wait_for("dialog[open] button:focus").await?;
    h.click("dialog[open] button.danger").await?;
    h.wait_for("#running-purges .transaction").await?;
    h.snapshot("purge-running").await?;
    h.wait_for("#running-purges .transaction[data-status=SUCCESS]").await?;
    h.wait_for_attr("#running-purges .transaction [role=progressbar]", "aria-valuenow", "100").await?;
    h.snapshot("purge-done").await?;
    // Tasks say who started the purge and what it purged, by its URI patterns.
    h.goto("/demo/tasks?operation=purge").await?;
    let row = h.wait_until("table.tasks tbody tr:first-child", |t| t.contains("Purge of 2 URI patterns")).await?;
    assert!(row.contains("www.shop.example/index.html") && row.contains("www.shop.example/img/logo.png"), "{row}");
    assert!(row.contains("operator"), "who started it: {row}");
    h.snapshots("tasks-purge").await?;
    h.stop().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn entries_pasted_into_a_list_get_a_validation_report_and_the_valid_ones_are_added() -> anyhow::Result<()> {
    let h = Harness::start().await?;
    h.login_as("admin", PASSWORD).await?;
    h.click("nav a[href='/demo/lists']").await?;
    h.click("tr[data-list=ip_demo_scanners] button").await?;
    h.wait_for_path("/demo/lists?list=ip_demo_scanners").await?;
    // Where it is used: the properties and their rules, and what deleting it would leave matching nothing.
    let usage = h.wait_until("#list-usage", |t| t.contains("www-shop")).await?;
    assert!(usage.contains("api-gateway") && usage.contains("Block known scanners (block)"), "{usage}");
    h.snapshots("list-usage").await?;
    h.click_text(".list-header button.danger-outline", "Delete list").await?;
    h.wait_until("dialog[open] #stranded-rules", |t| {
        t.contains("2 traffic-shaping rules in 2 properties would match nothing.")
    })
    .await?;
    h.click("dialog[open] .actions button:first-child").await?;
    h.fill("textarea[name=entries]", "192.0.2.200\n10.9.8.7/8\nnot-an-ip\n192.0.2.200\n198.51.100.7\n# a comment")
        .await?;
    h.click("#add-entries .actions button").await?;
    // A range with host bits set is refused with the network it would mean (it was stored as 10.0.0.0/8
    // without a word), offered as a one-click fix; an entry the list's 198.51.100.0/24 holds is pointed out.
    let report =
        h.wait_until("#add-entries .report", |t| t.contains("2 valid") && t.contains("already covered")).await?;
    assert!(report.contains("2 invalid of 5 line(s) (duplicates merged)"), "{report}");
    assert!(report.contains("Line 2: \"10.9.8.7/8\" has host bits set: did you mean 10.0.0.0/8?"), "{report}");
    assert!(report.contains("Line 3: \"not-an-ip\" is not an IP address or CIDR range"), "{report}");
    assert!(report.contains("Line 5: 198.51.100.7 is already covered by 198.51.100.0/24, in the list."), "{report}");
    h.click("#add-entries .report button.fix[data-line='2']").await?;
    let report = h.wait_until("#add-entries .report", |t| t.contains("3 valid")).await?;
    assert!(report.contains("1 invalid of 5 line(s) (duplicates merged)"), "{report}");
    let text = h.value("textarea[name=entries]").await?;
    assert!(text.contains("\n10.0.0.0/8\n") && !text.contains("10.9.8.7"), "the fix went into the text: {text:?}");
    h.snapshot("list-report").await?;
    h.snapshots("list-report").await?;
    h.click("#add-entries .report button.primary").await?;
    h.wait_for_text("#add-entries [role=status].notice", "Added 3 entries; 0 were already in the list.").await?;
    h.wait_for("tr[data-entry='10.0.0.0/8']").await?;
    h.wait_for("tr[data-entry='192.0.2.200']").await?;
    h.wait_for(".task-progress[data-status=COMPLETED]").await?;
    h.snapshot("list-added").await?;
    // A rule links to its row in the property's editor.
    h.click("#list-usage li[data-property=www-shop] li[data-rule] a").await?;
    h.wait_for("tr.target-node[aria-current=true]").await?;
    h.snapshots("editor-linked-rule").await?;
    h.stop().await
}

/// Replaces the raw editor's text as a paste would (one input event).
async fn paste_raw(b: &edge_e2e::Browser, text: &str) -> anyhow::Result<()> {
    b.wait_for("textarea[name=raw]").await?;
    let script = "const t = document.querySelector('textarea[name=raw]'); t.value = arguments[0]; \
                  t.dispatchEvent(new Event('input', { bubbles: true }));";
    b.client.execute(script, vec![serde_json::json!(text)]).await?;
    Ok(())
}

/// The words an administrator must never be shown: a JSON path, a parser's type names.
fn assert_in_words(shown: &str) {
    for jargon in ["$.", "expected", "invalid type", "u16", "u32", "unknown field"] {
        assert!(!shown.contains(jargon), "{jargon:?} in {shown:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_configuration_is_described_in_words_at_the_places_the_editor_names() -> anyhow::Result<()> {
    let h = Harness::start().await?;
    h.login_as("admin", PASSWORD).await?;
    h.goto(SHOP).await?;
    h.click("#toggle-raw").await?;
    let text = value(&h, "textarea[name=raw]").await?;
    let mut config: serde_json::Value = serde_json::from_str(&text)?;
    config["cache_rules"][0]["ttl_seconds"] = serde_json::json!("3600");
    config["origins"][1]["port"] = serde_json::json!(70000);
    paste_raw(&h, &serde_json::to_string_pretty(&config)?).await?;

    // Leaving raw mode checks it as the server would: each problem at its row, by the row's name.
    h.click("#toggle-raw").await?;
    let shown = h.wait_until("#raw-error", |t| t.contains("TTL")).await?;
    assert!(
        shown.contains(
            "Cache rules › /static/* › TTL (s): \"3600\" is text; a TTL (seconds, up to a year) is a whole number \
             from 0 to 31,536,000"
        ),
        "{shown}"
    );
    assert!(
        shown.contains(
            "Origins › shop-fallback › Port: 70,000 is over 65,535; a port is a whole number from 1 to 65,535"
        ),
        "{shown}"
    );
    assert_in_words(&shown);
    h.snapshots("raw-problems").await?;

    // A JSON syntax error says where, in words.
    paste_raw(&h, "{\n  \"name\": \"www-shop\"\n  \"origins\": []\n}").await?;
    h.click("#toggle-raw").await?;
    let shown = h.wait_until("#raw-error", |t| t.contains("line 3")).await?;
    assert!(shown.contains("The JSON is not valid at line 3, column 3"), "{shown}");
    assert_in_words(&shown);

    // What the server refuses reads the same: its answer's places as the editor names them.
    config["cache_rules"][0]["ttl_seconds"] = serde_json::json!(3600);
    paste_raw(&h, &serde_json::to_string_pretty(&config)?).await?;
    h.click("#save-config").await?;
    h.click("#confirm-save").await?;
    let shown = h.wait_until("dialog[open] .notice.error", |t| t.contains("Port")).await?;
    assert!(
        shown.contains(
            "Origins › shop-fallback › Port: 70,000 is over 65,535; a port is a whole number from 1 to 65,535"
        ),
        "{shown}"
    );
    assert_in_words(&shown);
    h.snapshots("save-refused").await?;
    h.stop().await
}
