//! Where the server is and who calls it: flags first, then the environment (`EDGE_URL`, `EDGE_TOKEN`, …), then
//! a profile of the profile file (`~/.config/edge/config`, or `$EDGE_CONFIG`).
//!
//! ```text
//! # ~/.config/edge/config — keep it private (chmod 600): it holds tokens
//! [default]
//! url = https://console.example.com/acme
//! token = edge_…
//!
//! [staging]
//! url = https://staging.example.com
//! customer = acme
//! token = edge_…
//! ```

use std::{collections::HashMap, path::PathBuf};

use crate::client::{Auth, Exit, Failure, Result};

/// What the flags and the environment said (clap reads both: a flag wins over its variable).
#[derive(Debug, Default, Clone)]
pub struct Given {
    pub url: Option<String>,
    pub customer: Option<String>,
    pub token: Option<String>,
    pub user: Option<String>,
    pub password: Option<String>,
    pub otp: Option<String>,
    pub profile: Option<String>,
    pub config: Option<PathBuf>,
}

/// Where to send requests, as whom.
pub struct Settings {
    /// `https://host`
    pub origin: String,
    pub customer: String,
    pub auth: Auth,
}

/// The profile file's path: `$EDGE_CONFIG` (or `--config`), else `$XDG_CONFIG_HOME/edge/config`, else
/// `~/.config/edge/config`.
fn profile_path(given: &Given) -> Option<PathBuf> {
    if let Some(p) = &given.config {
        return Some(p.clone());
    }
    let config_home = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))?;
    Some(config_home.join("edge").join("config"))
}

/// The sections of an INI-style file: `[name]` and `key = value` lines; `#` and `;` start comments.
pub fn parse_profiles(text: &str) -> HashMap<String, HashMap<String, String>> {
    let mut profiles: HashMap<String, HashMap<String, String>> = HashMap::new();
    let mut section = "default".to_string();
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            section = name.trim().to_string();
            continue;
        }
        if let Some((key, value)) = line.split_once('=') {
            profiles.entry(section.clone()).or_default().insert(key.trim().to_string(), value.trim().to_string());
        }
    }
    profiles
}

/// The profile named by `--profile` / `EDGE_PROFILE` (`default` otherwise); a named profile must exist, the
/// default one may not.
fn profile(given: &Given) -> Result<HashMap<String, String>> {
    let name = given.profile.clone().unwrap_or_else(|| "default".into());
    let Some(path) = profile_path(given) else { return Ok(HashMap::new()) };
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(_) if given.profile.is_none() && given.config.is_none() => return Ok(HashMap::new()),
        Err(e) => {
            return Err(Failure::new(Exit::Usage, format!("cannot read the profile file {}: {e}", path.display())));
        }
    };
    warn_if_readable_by_others(&path);
    let mut profiles = parse_profiles(&text);
    match profiles.remove(&name) {
        Some(p) => Ok(p),
        None if given.profile.is_none() => Ok(HashMap::new()),
        None => Err(Failure::new(Exit::Usage, format!("the profile file {} has no [{name}]", path.display()))),
    }
}

#[cfg(unix)]
fn warn_if_readable_by_others(path: &std::path::Path) {
    use std::os::unix::fs::PermissionsExt;
    if let Ok(meta) = std::fs::metadata(path)
        && meta.permissions().mode() & 0o077 != 0
    {
        eprintln!("edge: warning: {} can be read by other users; it holds tokens: chmod 600 it", path.display());
    }
}

#[cfg(not(unix))]
fn warn_if_readable_by_others(_: &std::path::Path) {}

/// `url` split into the server's origin and, when its path names one, the customer: `https://h/acme`,
/// `https://h/acme/v1` and `https://h` with a customer given apart.
pub fn split_url(url: &str) -> Result<(String, Option<String>)> {
    let url = url.trim().trim_end_matches('/');
    let Some((scheme, rest)) = url.split_once("://").filter(|(s, _)| *s == "http" || *s == "https") else {
        return Err(Failure::new(Exit::Usage, format!("{url:?} is not an http:// or https:// address")));
    };
    let (host, path) = rest.split_once('/').unwrap_or((rest, ""));
    if host.is_empty() {
        return Err(Failure::new(Exit::Usage, format!("{url:?} has no host")));
    }
    let mut segments = path.split('/').filter(|s| !s.is_empty());
    let customer = segments.next().map(str::to_string);
    Ok((format!("{scheme}://{host}"), customer))
}

impl Settings {
    /// The settings from flags, environment and profile. `person`: the command needs a person's own login
    /// (token management), not a token.
    pub fn resolve(given: &Given, person: bool) -> Result<Settings> {
        let profile = profile(given)?;
        let from_profile = |key: &str| profile.get(key).cloned().filter(|v| !v.is_empty());
        let url = given.url.clone().or_else(|| from_profile("url")).ok_or_else(|| {
            Failure::new(Exit::Usage, "where is the server? Give --url, EDGE_URL or a profile (see edge --help)")
        })?;
        let (origin, in_url) = split_url(&url)?;
        let customer = given.customer.clone().or(in_url).or_else(|| from_profile("customer")).ok_or_else(|| {
            Failure::new(
                Exit::Usage,
                "which customer? Put it in the address (https://host/CUSTOMER) or give --customer",
            )
        })?;
        if !edge_api::paths::is_valid_customer_name(&customer) {
            return Err(Failure::new(Exit::Usage, format!("{customer:?} is not a customer name")));
        }
        let user = given.user.clone().or_else(|| from_profile("user"));
        let auth = match (user, person) {
            (Some(user), _) => {
                let password = match given.password.clone().or_else(|| from_profile("password")) {
                    Some(p) => p,
                    None => rpassword::prompt_password(format!("Password of {user}: ")).map_err(|e| {
                        Failure::new(Exit::Usage, format!("no password: set EDGE_PASSWORD or run on a terminal ({e})"))
                    })?,
                };
                Auth::Basic { user, password, otp: given.otp.clone() }
            }
            (None, true) => {
                return Err(Failure::new(
                    Exit::Usage,
                    "API tokens are managed by a person: give --user NAME (the password from EDGE_PASSWORD or asked; \
                     --otp CODE with two-factor on)",
                ));
            }
            (None, false) => match given.token.clone().or_else(|| from_profile("token")) {
                Some(t) => {
                    let t = t.trim().to_string();
                    if !edge_api::tokens::is_well_formed(&t) {
                        return Err(Failure::new(
                            Exit::Usage,
                            "EDGE_TOKEN (or --token) is not an Edge API token: edge_ and 46 letters and digits",
                        ));
                    }
                    Auth::Token(t)
                }
                None => Auth::None,
            },
        };
        Ok(Settings { origin, customer, auth })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_names_the_server_and_maybe_the_customer() {
        assert_eq!(split_url("https://c.example/acme").unwrap(), ("https://c.example".into(), Some("acme".into())));
        assert_eq!(split_url("https://c.example/acme/v1/").unwrap(), ("https://c.example".into(), Some("acme".into())));
        assert_eq!(split_url("http://127.0.0.1:8080").unwrap(), ("http://127.0.0.1:8080".into(), None));
        assert!(split_url("c.example/acme").is_err());
        assert!(split_url("ftp://c.example").is_err());
    }

    #[test]
    fn profiles_are_sections_of_key_value_lines() {
        let p = parse_profiles("# mine\nurl = https://a/acme\n[staging]\n token=edge_x \n; c\n[empty]\n");
        assert_eq!(p["default"]["url"], "https://a/acme");
        assert_eq!(p["staging"]["token"], "edge_x");
        assert!(!p.contains_key("empty"));
    }
}
