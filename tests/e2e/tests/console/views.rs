//! Every view doing its main job through the real server in headless Chromium, one shared server and browser
//! for the whole tour (each step says which view failed): accessibility (axe-core) of every view, the keyboard
//! alone, and each view's own work.

use anyhow::{Context, Result, ensure};
use edge_e2e::{END, ENTER, Harness, PASSWORD, TAB, VIEWS};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_view_does_its_main_job() -> Result<()> {
    let mut h = Harness::start().await?;
    signed_out_views(&h).await.context("signed-out views")?;
    h.no_page_errors("signed-out views").await?;
    keyboard_only(&h).await.context("keyboard only")?;
    h.no_page_errors("keyboard only").await?;
    for (path, ready) in VIEWS {
        h.open(path, ready).await?;
        h.axe(path).await?;
    }
    account(&mut h).await.context("account")?;
    h.no_page_errors("account").await?;
    tasks(&h).await.context("tasks")?;
    h.no_page_errors("tasks").await?;
    statistics(&h).await.context("statistics")?;
    h.no_page_errors("statistics").await?;
    security(&h).await.context("security")?;
    h.no_page_errors("security").await?;
    properties(&h).await.context("properties")?;
    h.no_page_errors("properties").await?;
    network_lists(&h).await.context("network lists")?;
    h.no_page_errors("network lists").await?;
    users(&h).await.context("users")?;
    h.no_page_errors("users").await?;
    audit(&h).await.context("audit log")?;
    h.no_page_errors("audit log").await?;
    password_reset(&mut h).await.context("password reset")?;
    h.no_page_errors("password reset").await?;
    password_change(&h).await.context("password change")?;
    h.no_page_errors("password change").await?;
    let viewer = h.second_browser().await?;
    viewer_sees_no_write_controls(&viewer).await.context("viewer")?;
    session_expiry(&mut h).await.context("session expiry")?;
    h.no_page_errors("session expiry").await?;
    h.stop().await
}

/// The login form and the password-reset page pass axe before anyone logs in.
async fn signed_out_views(h: &Harness) -> Result<()> {
    h.goto("/login").await?;
    h.wait_for("input[name=customer]").await?;
    h.axe("/login").await?;
    h.goto("/reset-password?customer=demo&token=x").await?;
    h.wait_for("input[name=password]").await?;
    h.axe("/reset-password").await
}

/// Log in, move between views and submit a form with the keyboard alone.
async fn keyboard_only(h: &Harness) -> Result<()> {
    h.goto("/login").await?;
    // The customer field has the focus on arrival.
    h.wait_for("input[name=customer]:focus").await?;
    h.keys("demo").await?;
    h.keys(TAB).await?;
    h.keys("admin").await?;
    h.keys(TAB).await?;
    h.keys(PASSWORD).await?;
    h.keys(ENTER).await?;
    h.wait_for_path("/demo/stats").await?;
    h.wait_for_text(".topbar .user", "admin").await?;
    // The skip link comes first, then the navigation.
    h.tab_to("a.skip-link", 3).await?;
    h.tab_to("nav a[href='/demo/account']", 15).await?;
    h.keys(ENTER).await?;
    h.wait_for_path("/demo/account").await?;
    h.tab_to("input[name=display_name]", 20).await?;
    // Tab selects the field's text: End, then type after it.
    h.keys(END).await?;
    h.keys(" (keys)").await?;
    h.keys(ENTER).await?;
    h.wait_for_text("[role=status].notice", "The account is saved.").await?;
    h.goto("/demo/account").await?;
    let name = h.value("input[name=display_name]").await?;
    ensure!(name.ends_with(" (keys)"), "the form was saved with Enter: {name}");
    Ok(())
}

async fn account(h: &mut Harness) -> Result<()> {
    // An operator sees the account read-only.
    let b = h.second_browser().await?;
    b.login_as("operator", PASSWORD).await?;
    b.goto("/demo/account").await?;
    let field = b.wait_for("input[name=display_name]").await?;
    ensure!(field.prop("disabled").await?.as_deref() == Some("true"), "an operator cannot change the account");
    ensure!(b.count("form button[type=submit]").await? == 0, "an operator has no Save");
    b.wait_for("table.features tbody tr").await?;
    b.client.clone().close().await?;
    h.goto("/demo/account").await?;
    h.fill("input[name=display_name]", "Demo Media Group").await?;
    // A bad e-mail address is refused with the API's message under the field, and nothing is saved.
    h.fill("input[name=contact_email]", "not-an-email").await?;
    h.click("form button[type=submit]").await?;
    h.wait_until("label .field-error", |t| t.contains("not-an-email")).await?;
    h.fill("input[name=contact_email]", "noc@demo.example").await?;
    h.select("select[name=timezone]", "Europe/Berlin").await?;
    h.click("form button[type=submit]").await?;
    h.wait_for_text("[role=status].notice", "The account is saved.").await?;
    h.snapshot("account").await?;
    h.client.refresh().await?;
    ensure!(h.value("input[name=display_name]").await? == "Demo Media Group", "saved display name");
    ensure!(h.value("select[name=timezone]").await? == "Europe/Berlin", "saved time zone");
    ensure!(h.value("input[name=contact_email]").await? == "noc@demo.example", "saved e-mail");
    Ok(())
}

async fn tasks(h: &Harness) -> Result<()> {
    // Something to follow: a change of a list deploys as a task.
    h.goto("/demo/lists?list=ip_demo_partners").await?;
    h.fill("textarea[name=entries]", "100.64.30.0/24").await?;
    h.click_text("#add-entries button", "Check").await?;
    h.click("#add-entries .report button.primary").await?;
    h.wait_for(".task-progress").await?;
    h.goto("/demo/tasks").await?;
    h.select("select[name=operation]", "networklist.deploy").await?;
    h.wait_until("table.tasks tbody", |t| t.contains("Network list deployment") && !t.contains("Purge")).await?;
    h.select("select[name=status]", "COMPLETED").await?;
    // The list's task reaches COMPLETED and shows under that filter, by the list's name.
    h.wait_until("table.tasks tbody", |t| t.contains("Partner offices") && t.contains("COMPLETED")).await?;
    ensure!(
        h.count("table.tasks tbody a[href='/demo/lists?list=ip_demo_partners']").await? >= 1,
        "the list's name links to it"
    );
    h.snapshot("tasks").await?;
    Ok(())
}

async fn statistics(h: &Harness) -> Result<()> {
    h.goto("/demo/stats?range=24h&dims=country&metrics=hits").await?;
    h.wait_for(".stats-table tbody tr").await?;
    // A filter narrows the rows to one country.
    h.select("select[aria-label='Filter dimension']", "country").await?;
    h.fill("input[name=filter-value]", "Germany").await?;
    h.click_text("#filters button", "Add filter").await?;
    h.wait_until(".filter-chip", |t| t.contains("Country is Germany")).await?;
    h.wait_until(".stats-table tbody", |t| !t.is_empty() && t.lines().all(|l| l.contains("Germany"))).await?;
    let url = h.client.current_url().await?;
    ensure!(url.as_str().contains("filters=country%3D%3DGermany"), "the filter is in the address: {url}");
    h.click(".filter-chip button").await?;
    h.wait_gone(".filter-chip").await?;
    // Sorting by requests (hits), descending: the header says so, and the column falls.
    h.click_text("th button.sort", "Requests").await?;
    h.wait_for_attr("th[aria-sort=descending] button", "class", "sort").await?;
    let hits = column(h, ".stats-table", "Requests").await?;
    ensure!(hits.windows(2).all(|w| w[0] >= w[1]), "hits fall: {hits:?}");
    // Paging: 50 rows a page.
    let first = h.wait_until(".pager [role=status]", |t| t.starts_with("1–")).await?;
    if h.wait_for(".pager button:last-child").await?.prop("disabled").await?.as_deref() != Some("true") {
        h.click_text(".pager button", "Next").await?;
        h.wait_until(".pager [role=status]", |t| t.starts_with("51–")).await?;
        ensure!(h.client.current_url().await?.as_str().contains("page=1"), "the page is in the address");
    } else {
        ensure!(first.starts_with("1–"), "{first}");
    }
    // CSV export: the file holds the header and the rows of the chart's answer.
    let csv = download(h, "#export-csv").await?;
    ensure!(csv.starts_with("starttime,endtime,country,hits\n"), "CSV header: {}", &csv[..csv.len().min(80)]);
    ensure!(csv.lines().count() > 2, "CSV rows");
    // The chart has an accessible name and its numbers as a table.
    h.wait_for("#time-chart[role=group][aria-label]").await?;
    h.click(".chart-figure details.chart-data summary").await?;
    h.wait_for(".chart-figure details.chart-data table tbody tr").await?;
    Ok(())
}

/// The numbers of one column of a table, by its header's text (from each cell's exact value on hover:
/// `12,345` or `1,234,567 bytes`).
async fn column(h: &Harness, table: &str, name: &str) -> Result<Vec<f64>> {
    let values = h
        .client
        .execute(
            r#"const [table, name] = arguments;
            const t = document.querySelector(table);
            const i = [...t.querySelectorAll("thead th")].findIndex(th => th.textContent.trim().startsWith(name));
            return [...t.querySelectorAll("tbody tr")].map(tr => tr.children[i].getAttribute("title"));"#,
            vec![json!(table), json!(name)],
        )
        .await?;
    let values: Vec<String> = serde_json::from_value(values)?;
    Ok(values.iter().filter_map(|v| v.replace(',', "").split_whitespace().next()?.parse().ok()).collect())
}

/// Clicks a download button and returns the file's text (the page's blob is caught as it is made).
async fn download(h: &Harness, button: &str) -> Result<String> {
    h.client
        .execute(
            r#"window.__blobs = [];
            const make = URL.createObjectURL;
            URL.createObjectURL = blob => { window.__blobs.push(blob); return make(blob); };"#,
            vec![],
        )
        .await?;
    h.click(button).await?;
    let text = h
        .client
        .execute_async(
            r#"const done = arguments[arguments.length - 1];
            const wait = () => window.__blobs.length ? window.__blobs[0].text().then(done) : setTimeout(wait, 50);
            wait();"#,
            vec![],
        )
        .await?;
    Ok(serde_json::from_value(text)?)
}

async fn security(h: &Harness) -> Result<()> {
    h.goto("/demo/security").await?;
    h.wait_for("#events table tbody tr").await?;
    h.wait_for("#request-trends .chart svg").await?;
    // The same filter builder as the statistics.
    h.select("#events select[aria-label='Filter dimension']", "event_action").await?;
    h.fill("#events input[name=filter-value]", "BLOCK").await?;
    h.click_text("#events button", "Add filter").await?;
    h.wait_until("#events table tbody", |t| {
        !t.is_empty() && t.lines().filter(|l| !l.contains("Add to list")).all(|l| l.contains("BLOCK"))
    })
    .await?;
    ensure!(h.client.current_url().await?.as_str().contains("filters=event_action"), "the filter is in the address");
    // A malformed filter (a link) gets the API's message, not a blank view.
    h.goto("/demo/security?filters=nonsense%3D%3D1").await?;
    h.wait_for("#events [role=alert]").await?;
    Ok(())
}

async fn properties(h: &Harness) -> Result<()> {
    // A new property, then its first change and a rollback to version 1.
    h.goto("/demo/properties").await?;
    h.click_text("button.primary", "New property").await?;
    h.fill("dialog[open] input[name=name]", "www-e2e").await?;
    h.fill("dialog[open] textarea[name=hosts]", "e2e.example").await?;
    h.click("dialog[open] button[type=submit]").await?;
    h.wait_for_path("/demo/properties?name=www-e2e").await?;
    h.wait_for("tr[data-version='1']").await?;
    // Raw JSON mode: the configuration as text; invalid JSON is refused with a message, valid JSON is saved.
    h.click("#toggle-raw").await?;
    let raw = h.value("textarea[name=raw]").await?;
    ensure!(raw.contains("\"name\": \"www-e2e\""), "raw JSON of the configuration: {raw}");
    h.fill("textarea[name=raw]", "{ not json").await?;
    h.click("#save-config").await?;
    h.wait_until("[role=alert]", |t| t.starts_with("The JSON is not valid")).await?;
    h.wait_for("#unsaved").await?;
    let changed = raw.replace("\"pattern\": \"e2e.example\"", "\"pattern\": \"raw.e2e.example\"");
    ensure!(changed != raw, "the host pattern is in the raw JSON: {raw}");
    h.fill("textarea[name=raw]", &changed).await?;
    // Saving shows the changes first; the comment goes with them.
    h.click("#save-config").await?;
    h.wait_until("dialog#review .diff", |t| t.contains("raw.e2e.example")).await?;
    h.fill("dialog#review input[name=comment]", "raw edit").await?;
    h.click("#confirm-save").await?;
    h.wait_until("#save-notice", |t| t.starts_with("Saved as version 2")).await?;
    h.wait_gone("#unsaved").await?;
    h.click("#toggle-raw").await?;
    h.wait_for("div[data-section='Host patterns'] input[aria-label=Pattern]").await?;
    ensure!(h.value("div[data-section='Host patterns'] input[aria-label=Pattern]").await? == "raw.e2e.example");
    // History: the changes of version 2, also after a reload.
    h.client.refresh().await?;
    h.wait_for("tr[data-version='2']").await?;
    h.click_text("tr[data-version='2'] button", "Changes").await?;
    h.wait_until(".diff", |t| t.contains("raw.e2e.example")).await?;
    h.snapshot("property-history").await?;
    // Rollback to version 1 after the reload: a new version 3 with version 1's configuration.
    h.click_text("tr[data-version='1'] button", "Roll back to this").await?;
    h.click("dialog[open] button.danger").await?;
    h.wait_for("tr[data-version='3']").await?;
    h.wait_for("div[data-section='Host patterns'] input[aria-label=Pattern]").await?;
    ensure!(h.value("div[data-section='Host patterns'] input[aria-label=Pattern]").await? == "e2e.example");
    Ok(())
}

async fn network_lists(h: &Harness) -> Result<()> {
    // Create.
    h.goto("/demo/lists").await?;
    h.click("#new-list").await?;
    h.fill("dialog[open] input[name=name]", "E2E blocklist").await?;
    h.select("dialog[open] select[name=type]", "GEO").await?;
    h.fill("dialog[open] input[name=description]", "made by the test").await?;
    h.click("dialog[open] button[type=submit]").await?;
    h.wait_until(".list-header h2", |t| t.contains("E2E blocklist")).await?;
    // Rename and describe.
    h.click_text(".list-header button", "Rename or describe").await?;
    h.fill(".list-header input[name=name]", "E2E embargo").await?;
    h.click(".list-header form button[type=submit]").await?;
    h.wait_until(".list-header h2", |t| t.contains("E2E embargo")).await?;
    // Add entries (one invalid line is reported and left out), then remove one.
    h.fill("textarea[name=entries]", "DE\nFR\nXX1").await?;
    h.click_text("#add-entries button", "Check").await?;
    h.wait_until("#add-entries .report", |t| t.contains("2 valid") && t.contains("Line 3")).await?;
    h.click("#add-entries .report button.primary").await?;
    h.wait_for("tr[data-entry=FR]").await?;
    h.wait_for(".task-progress[data-status=COMPLETED]").await?;
    h.click("tr[data-entry=FR] button").await?;
    h.click("dialog[open] button.danger").await?;
    h.wait_gone("tr[data-entry=FR]").await?;
    h.wait_for("tr[data-entry=DE]").await?;
    // Search the entries.
    h.fill("input[aria-label='Search entries']", "DE").await?;
    h.click_text("form.search button", "Search").await?;
    h.wait_for("tr[data-entry=DE]").await?;
    // Deprecate, then undeprecate.
    h.click_text(".list-header button", "Deprecate").await?;
    h.click("dialog[open] button.danger").await?;
    h.wait_until(".list-header h2", |t| t.contains("deprecated")).await?;
    h.click_text(".list-header button", "Undeprecate").await?;
    h.wait_until(".list-header h2", |t| !t.contains("deprecated")).await?;
    // Delete all entries, then the list.
    h.click_text(".list-header button", "Delete all entries").await?;
    h.click("dialog[open] button.danger").await?;
    h.wait_gone("tr[data-entry]").await?;
    h.wait_for(".empty").await?;
    h.click_text(".list-header button", "Delete list").await?;
    h.click("dialog[open] button.danger").await?;
    h.wait_for_path("/demo/lists").await?;
    h.wait_for("tr[data-list=ip_demo_scanners]").await?;
    ensure!(h.count("tr[data-list]").await? > 0 && !h.wait_for("table.lists").await?.text().await?.contains("E2E"));
    // The type filter.
    h.select("select[name=list-type]", "GEO").await?;
    h.wait_until("table.lists tbody", |t| !t.contains("Known scanners")).await?;
    Ok(())
}

async fn users(h: &Harness) -> Result<()> {
    h.goto("/demo/users").await?;
    h.wait_for("tr[data-username=operator]").await?;
    // Edit: a new full name and role.
    h.click_text("tr[data-username=operator] button", "Edit").await?;
    h.fill("dialog[open] input[name=full_name]", "Olga Operator").await?;
    h.click("dialog[open] button[type=submit]").await?;
    h.wait_for_text("[role=status].notice", "operator was saved.").await?;
    h.wait_until("tr[data-username=operator]", |t| t.contains("Olga Operator")).await?;
    // Search.
    h.fill("input[name=q]", "olga").await?;
    h.click_text("form.search button", "Search").await?;
    h.wait_until("table.users tbody", |t| t.contains("operator") && !t.contains("viewer")).await?;
    h.fill("input[name=q]", "").await?;
    h.click_text("form.search button", "Search").await?;
    // A new user, whose password is reset and who is then deleted.
    h.click("#new-user").await?;
    h.fill("dialog[open] input[name=username]", "dora").await?;
    h.fill("dialog[open] input[name=email]", "dora@example.com").await?;
    h.fill("dialog[open] input[name=password]", "quiet-harbor-lamp-7").await?;
    h.click("dialog[open] button[type=submit]").await?;
    h.wait_for("tr[data-username=dora]").await?;
    // Reset password: the user gets a link by mail.
    let mails = h.outbox()?.len();
    h.click_text("tr[data-username=dora] button", "Reset password").await?;
    h.click("dialog[open] button.danger").await?;
    h.wait_until("[role=status].notice", |t| t.contains("password was reset")).await?;
    ensure!(h.outbox()?.len() == mails + 1, "a reset mail was written");
    // Delete.
    h.click_text("tr[data-username=dora] button", "Delete").await?;
    h.click("dialog[open] button.danger").await?;
    h.wait_for_text("[role=status].notice", "dora was deleted.").await?;
    h.wait_gone("tr[data-username=dora]").await?;
    Ok(())
}

/// The audit log holds the tour's own changes with who made them: filters live in the address (and survive a
/// reload), a target that still exists links to its page and a deleted one does not, pages, CSV export.
async fn audit(h: &Harness) -> Result<()> {
    h.click("nav a[href='/demo/audit']").await?;
    h.wait_for("table.audit tbody tr").await?;
    // A family of operations: the users step's changes.
    h.select("select[name=operation]", "user").await?;
    h.wait_until("table.audit tbody", |t| t.contains("User deleted") && t.contains("dora")).await?;
    let url = h.client.current_url().await?;
    ensure!(url.as_str().contains("operation=user"), "the filter is in the address: {url}");
    h.snapshot("audit").await?;
    // The deleted user's records link nowhere; the edited user's record links to the user.
    h.select("select[name=operation]", "user.delete").await?;
    h.wait_for("tr[data-operation='user.delete'][data-target-exists=false]").await?;
    ensure!(h.count("tr[data-operation='user.delete'] td.target a").await? == 0, "a deleted user has no link");
    h.client.refresh().await?;
    h.wait_for("tr[data-operation='user.delete']").await?;
    ensure!(h.value("select[name=operation]").await? == "user.delete", "the filter survives a reload");
    h.select("select[name=operation]", "user.update").await?;
    h.wait_until("tr[data-operation='user.update'][data-target-exists=true]", |t| {
        t.contains("admin") && t.contains("operator") && t.contains("full_name: Olga Operator")
    })
    .await?;
    h.click("tr[data-operation='user.update'] td.target a").await?;
    h.wait_for("tr[data-username=operator]").await?;
    ensure!(h.client.current_url().await?.as_str().contains("/demo/users?q=operator"), "the target's page");
    // The actor filter from the form; the whole family exported.
    h.goto("/demo/audit?operation=user").await?;
    h.fill("input[name=actor]", "admin").await?;
    h.click_text(".audit-filters button", "Apply").await?;
    h.wait_until(".pager [role=status]", |t| t.starts_with("1–")).await?;
    ensure!(h.client.current_url().await?.as_str().contains("actor=admin"), "the actor is in the address");
    let shown = h.wait_until(".pager [role=status]", |t| t.starts_with("1–")).await?;
    let total: usize = shown.rsplit(' ').next().and_then(|n| n.parse().ok()).context("the total")?;
    let csv = download(h, "#export-csv").await?;
    ensure!(
        csv.starts_with("time,actor,actor_type,actor_id,source_address,operation,outcome,target_type,target_id,target_name,details\n"),
        "CSV header: {}",
        &csv[..csv.len().min(120)]
    );
    ensure!(csv.lines().count() == total + 1, "one line per record: {} for {total}", csv.lines().count());
    ensure!(csv.contains(",user.delete,success,user,") && csv.contains("dora"), "the deletion is exported");
    // Everything, a page at a time.
    h.goto("/demo/audit").await?;
    h.select("select[name=count]", "25").await?;
    h.wait_until(".pager [role=status]", |t| t.starts_with("1–25 of")).await?;
    h.click_text(".pager button", "Next").await?;
    h.wait_until(".pager [role=status]", |t| t.starts_with("26–")).await?;
    h.snapshot("audit-page-2").await?;
    let url = h.client.current_url().await?;
    ensure!(url.as_str().contains("page=2") && url.as_str().contains("count=25"), "the page is in the address: {url}");
    Ok(())
}

/// The link of the last mail in the outbox.
fn last_reset_link(h: &Harness) -> Result<String> {
    let mail = h.outbox()?.pop().context("a mail")?;
    let start = mail.find("/reset-password?").context("a reset link in the mail")?;
    let link: String = mail[start..].chars().take_while(|c| !c.is_whitespace()).collect();
    Ok(link.replace("&amp;", "&"))
}

async fn password_reset(h: &mut Harness) -> Result<()> {
    // The administrator resets the viewer's password; the link sets a new one.
    h.goto("/demo/users").await?;
    h.click_text("tr[data-username=viewer] button", "Reset password").await?;
    h.click("dialog[open] button.danger").await?;
    h.wait_until("[role=status].notice", |t| t.contains("password was reset")).await?;
    let link = last_reset_link(h)?;
    let b = h.second_browser().await?;
    b.goto(&link).await?;
    b.fill("input[name=password]", "viewers-new-password").await?;
    b.fill("input[name=again]", "viewers-new-password").await?;
    b.click("button[type=submit]").await?;
    b.wait_for_text("[role=status]", "Your new password is set.").await?;
    b.snapshot("password-reset").await?;
    // The same link again, a link without a token, and an expired one: each says why.
    b.goto(&link).await?;
    b.fill("input[name=password]", "viewers-other-password").await?;
    b.fill("input[name=again]", "viewers-other-password").await?;
    b.click("button[type=submit]").await?;
    b.wait_for("[role=alert]").await?;
    b.goto("/reset-password?customer=demo").await?;
    b.fill("input[name=password]", "viewers-other-password").await?;
    b.fill("input[name=again]", "viewers-other-password").await?;
    b.click("button[type=submit]").await?;
    b.wait_for("[role=alert]").await?;
    // The password set through the first link works.
    b.login_as("viewer", "viewers-new-password").await?;
    b.client.clone().close().await?;
    Ok(())
}

async fn password_change(h: &Harness) -> Result<()> {
    h.goto("/demo/me").await?;
    h.fill("#change-password input[name=current]", "not-my-password").await?;
    h.fill("#change-password input[name=new]", "admins-new-password").await?;
    h.fill("#change-password input[name=again]", "admins-new-password").await?;
    h.click("#change-password button[type=submit]").await?;
    h.wait_for("#change-password .notice.error").await?;
    h.fill("#change-password input[name=current]", PASSWORD).await?;
    h.click("#change-password button[type=submit]").await?;
    h.wait_for_text("#change-password [role=status]", "Your password is changed.").await?;
    h.click("#logout").await?;
    h.wait_for_path("/login").await?;
    h.login_as("admin", "admins-new-password").await?;
    Ok(())
}

/// A viewer finds no control that would change anything, in any view.
async fn viewer_sees_no_write_controls(b: &edge_e2e::Browser) -> Result<()> {
    b.login_as("viewer", "viewers-new-password").await?;
    for (path, ready) in VIEWS {
        b.goto(path).await?;
        let ready = match path {
            "/demo/users" => ".notice.info",
            "/demo/purge" => ".notice.info",
            "/demo/account" => ".notice.info",
            "/demo/audit" => ".notice.info",
            "/demo/lists?list=ip_demo_scanners" => "tr[data-entry]",
            _ => ready,
        };
        b.wait_for(ready).await.with_context(|| format!("{path} loads for a viewer"))?;
        let writable = b
            .client
            .execute(
                r#"const write = ["New property", "New list", "New user", "Save", "Save…", "Purge", "Delete list",
                  "Delete all entries", "Remove", "Roll back to this", "Add filter to list", "Rename or describe",
                  "Deprecate", "Check", "Add to host patterns", "Edit", "Delete", "Discard", "Purge this URL",
                  "Add to list…", "Add to network list…"];
                return [...document.querySelectorAll("main button, main input, main select, main textarea")]
                  .filter(e => !e.disabled && (write.includes(e.textContent.trim())
                    || ["display_name", "contact_email", "timezone", "uris", "entries", "comment"].includes(e.name)))
                  .map(e => e.outerHTML.slice(0, 120));"#,
                vec![],
            )
            .await?;
        let writable: Vec<String> = serde_json::from_value(writable)?;
        ensure!(writable.is_empty(), "{path} offers a viewer: {writable:?}");
    }
    ensure!(b.count("nav a[href='/demo/audit']").await? == 0, "only administrators see the audit log");
    b.client.clone().close().await?;
    Ok(())
}

/// When the session ends, the next request takes the console back to the login form, which says why and
/// returns to the same view after logging in. A reset link expires too.
async fn session_expiry(h: &mut Harness) -> Result<()> {
    h.goto("/demo/users").await?;
    h.click_text("tr[data-username=operator] button", "Reset password").await?;
    h.click("dialog[open] button.danger").await?;
    h.wait_until("[role=status].notice", |t| t.contains("password was reset")).await?;
    let link = last_reset_link(h)?;
    h.goto("/demo/tasks").await?;
    h.wait_for("table.tasks").await?;
    h.advance(2 * 60 * 60 * 1000);
    h.click("nav a[href='/demo/users']").await?;
    h.wait_for_path("/login").await?;
    h.wait_until(".notice.info", |t| t.contains("Your session has ended")).await?;
    let url = h.client.current_url().await?;
    ensure!(url.as_str().contains("reason=expired") && url.as_str().contains("next="), "{url}");
    h.snapshot("session-expired").await?;
    h.fill("input[name=password]", "admins-new-password").await?;
    h.click("button[type=submit]").await?;
    h.wait_for_text("main h1", "Users & roles").await?;
    // The operator's reset link is older than an hour: it says so.
    let b = h.second_browser().await?;
    b.goto(&link).await?;
    b.fill("input[name=password]", "operators-new-password").await?;
    b.fill("input[name=again]", "operators-new-password").await?;
    b.click("button[type=submit]").await?;
    let alert = b.wait_until("[role=alert]", |t| !t.is_empty()).await?;
    ensure!(alert.to_lowercase().contains("expired") || alert.to_lowercase().contains("invalid"), "{alert}");
    b.client.clone().close().await?;
    Ok(())
}
