//! Real receivers for alert notifications, on free loopback ports, stopped when dropped: an HTTP server that
//! records every request (method, path, headers, body) and answers with the statuses it is told, and an SMTP
//! server (RFC 5321: EHLO/HELO, MAIL, RCPT, DATA, RSET, NOOP, QUIT) that records every message.

#![allow(dead_code)]

use std::{
    collections::{HashMap, VecDeque},
    sync::{Arc, Mutex},
    time::Duration,
};

use tokio::{
    io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader},
    net::TcpListener,
    task::JoinHandle,
};

/// A request the HTTP receiver got.
#[derive(Debug, Clone)]
pub struct Received {
    pub method: String,
    pub path: String,
    /// Header names in lower case.
    pub headers: HashMap<String, String>,
    pub body: Vec<u8>,
}

/// An HTTP/1.1 server that records requests. It answers each with the next status of its script, then 200.
pub struct HttpReceiver {
    pub url: String,
    received: Arc<Mutex<Vec<Received>>>,
    script: Arc<Mutex<VecDeque<u16>>>,
    task: JoinHandle<()>,
}

impl HttpReceiver {
    pub async fn start() -> HttpReceiver {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let url = format!("http://{}/hook", listener.local_addr().expect("addr"));
        let received: Arc<Mutex<Vec<Received>>> = Arc::default();
        let script: Arc<Mutex<VecDeque<u16>>> = Arc::default();
        let (r, s) = (received.clone(), script.clone());
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let (r, s) = (r.clone(), s.clone());
                tokio::spawn(async move {
                    let (read, mut write) = stream.into_split();
                    let mut read = BufReader::new(read);
                    let mut line = String::new();
                    if read.read_line(&mut line).await.unwrap_or(0) == 0 {
                        return;
                    }
                    let mut parts = line.split_whitespace();
                    let (method, path) =
                        (parts.next().unwrap_or("").to_string(), parts.next().unwrap_or("").to_string());
                    let mut headers = HashMap::new();
                    loop {
                        let mut h = String::new();
                        if read.read_line(&mut h).await.unwrap_or(0) == 0 || h == "\r\n" {
                            break;
                        }
                        if let Some((k, v)) = h.trim_end().split_once(':') {
                            headers.insert(k.trim().to_lowercase(), v.trim().to_string());
                        }
                    }
                    let length: usize = headers.get("content-length").and_then(|l| l.parse().ok()).unwrap_or(0);
                    let mut body = vec![0; length];
                    if read.read_exact(&mut body).await.is_err() {
                        return;
                    }
                    let status = s.lock().unwrap().pop_front().unwrap_or(200);
                    r.lock().unwrap().push(Received { method, path, headers, body });
                    let answer = format!("HTTP/1.1 {status} X\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok");
                    let _ = write.write_all(answer.as_bytes()).await;
                    let _ = write.shutdown().await;
                });
            }
        });
        HttpReceiver { url, received, script, task }
    }

    /// The next requests are answered with these statuses (then 200).
    pub fn answer(&self, statuses: &[u16]) {
        self.script.lock().unwrap().extend(statuses);
    }

    pub fn received(&self) -> Vec<Received> {
        self.received.lock().unwrap().clone()
    }

    /// Waits up to `secs` for at least `n` requests.
    pub async fn wait_for(&self, n: usize, secs: u64) -> Vec<Received> {
        for _ in 0..secs * 20 {
            if self.received.lock().unwrap().len() >= n {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        self.received()
    }
}

impl Drop for HttpReceiver {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A message the SMTP sink got.
#[derive(Debug, Clone)]
pub struct Mail {
    pub from: String,
    pub to: Vec<String>,
    pub data: String,
}

/// An SMTP server that accepts every message and records it.
pub struct SmtpSink {
    pub url: String,
    mails: Arc<Mutex<Vec<Mail>>>,
    task: JoinHandle<()>,
}

impl SmtpSink {
    pub async fn start() -> SmtpSink {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let url = format!("smtp://{}", listener.local_addr().expect("addr"));
        let mails: Arc<Mutex<Vec<Mail>>> = Arc::default();
        let m = mails.clone();
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let m = m.clone();
                tokio::spawn(async move {
                    let (read, mut write) = stream.into_split();
                    let mut read = BufReader::new(read);
                    let _ = write.write_all(b"220 sink.test ESMTP\r\n").await;
                    let mut mail = Mail { from: String::new(), to: Vec::new(), data: String::new() };
                    loop {
                        let mut line = String::new();
                        if read.read_line(&mut line).await.unwrap_or(0) == 0 {
                            return;
                        }
                        let upper = line.to_uppercase();
                        let reply: &[u8] = if upper.starts_with("EHLO") {
                            b"250-sink.test\r\n250 8BITMIME\r\n"
                        } else if upper.starts_with("HELO") || upper.starts_with("NOOP") {
                            b"250 ok\r\n"
                        } else if upper.starts_with("MAIL FROM:") {
                            mail = Mail { from: line[10..].trim().to_string(), to: Vec::new(), data: String::new() };
                            b"250 ok\r\n"
                        } else if upper.starts_with("RCPT TO:") {
                            mail.to.push(line[8..].trim().to_string());
                            b"250 ok\r\n"
                        } else if upper.starts_with("RSET") {
                            mail = Mail { from: String::new(), to: Vec::new(), data: String::new() };
                            b"250 ok\r\n"
                        } else if upper.starts_with("DATA") {
                            let _ = write.write_all(b"354 go on\r\n").await;
                            loop {
                                let mut l = String::new();
                                if read.read_line(&mut l).await.unwrap_or(0) == 0 {
                                    return;
                                }
                                if l == ".\r\n" {
                                    break;
                                }
                                mail.data.push_str(l.strip_prefix('.').unwrap_or(&l));
                            }
                            m.lock().unwrap().push(mail.clone());
                            b"250 queued\r\n"
                        } else if upper.starts_with("QUIT") {
                            let _ = write.write_all(b"221 bye\r\n").await;
                            return;
                        } else {
                            b"502 not implemented\r\n"
                        };
                        if write.write_all(reply).await.is_err() {
                            return;
                        }
                    }
                });
            }
        });
        SmtpSink { url, mails, task }
    }

    pub fn mails(&self) -> Vec<Mail> {
        self.mails.lock().unwrap().clone()
    }
}

impl Drop for SmtpSink {
    fn drop(&mut self) {
        self.task.abort();
    }
}
