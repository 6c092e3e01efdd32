//! Outgoing e-mail: through SMTP when `--smtp-url` is given, otherwise into `<data-dir>/outbox/` as files.

use std::path::PathBuf;

use anyhow::Context;
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor, message::Mailbox};

pub enum Mailer {
    Smtp { transport: AsyncSmtpTransport<Tokio1Executor>, from: Mailbox },
    Outbox { dir: PathBuf, from: String },
}

impl Mailer {
    /// SMTP when `smtp_url` is set (e.g. `smtp://mail.example:25`, `smtps://user:pass@mail.example`), otherwise
    /// the outbox folder.
    pub fn new(smtp_url: Option<&str>, from: &str, outbox: PathBuf) -> anyhow::Result<Mailer> {
        match smtp_url {
            Some(url) => Ok(Mailer::Smtp {
                transport: AsyncSmtpTransport::<Tokio1Executor>::from_url(url).context("parsing --smtp-url")?.build(),
                from: from.parse().with_context(|| format!("parsing the sender address {from:?}"))?,
            }),
            None => Ok(Mailer::Outbox { dir: outbox, from: from.to_string() }),
        }
    }

    pub async fn send(&self, to: &str, subject: &str, body: &str) -> anyhow::Result<()> {
        match self {
            Mailer::Smtp { transport, from } => {
                let message = Message::builder()
                    .from(from.clone())
                    .to(to.parse().with_context(|| format!("recipient {to:?}"))?)
                    .subject(subject)
                    .body(body.to_string())?;
                transport.send(message).await.context("sending mail over SMTP")?;
                Ok(())
            }
            Mailer::Outbox { dir, from } => {
                // A reset link is a credential: the outbox and its mail are the server's user's alone.
                crate::private::dir(dir).with_context(|| format!("creating {}", dir.display()))?;
                let name =
                    format!("{}-{}.eml", chrono::Utc::now().format("%Y%m%dT%H%M%S%.3fZ"), crate::store::new_id());
                let path = dir.join(name);
                let text = format!("From: {from}\r\nTo: {to}\r\nSubject: {subject}\r\n\r\n{body}\r\n");
                crate::private::write(&path, text.as_bytes())
                    .await
                    .with_context(|| format!("writing {}", path.display()))?;
                tracing::info!(path = %path.display(), "no SMTP server configured: mail written to the outbox");
                Ok(())
            }
        }
    }
}
