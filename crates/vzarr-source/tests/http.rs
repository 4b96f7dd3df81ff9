//! Object-store errors as users meet them, against a scripted HTTP server on loopback: a 404
//! and a 403 name the URL (and the 404 is recognisable as "not found"), and a transient 503 is
//! retried by object_store's retry policy until the object is served.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

use vzarr_source::{ByteSource, Clients, ObjectSource, SourceError, locate};

/// A server answering request `i` with `statuses[i]` (the last one repeated), serving `body`
/// (ranged when asked) with a 200/206, an empty body otherwise. Returns its base URL and the
/// request lines it saw.
fn serve(statuses: Vec<u16>, body: Vec<u8>) -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    std::thread::spawn(move || {
        for (i, conn) in listener.incoming().enumerate() {
            let Ok(mut conn) = conn else { return };
            let mut reader = BufReader::new(conn.try_clone().unwrap());
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                continue;
            }
            let mut range = None;
            let mut content_length = 0usize;
            loop {
                let mut h = String::new();
                if reader.read_line(&mut h).unwrap_or(0) == 0 || h == "\r\n" {
                    break;
                }
                let lower = h.to_ascii_lowercase();
                if let Some(v) = lower.strip_prefix("range: bytes=") {
                    let (a, b) = v.trim().split_once('-').unwrap();
                    range = Some((a.parse::<usize>().unwrap(), b.parse::<usize>().unwrap()));
                }
                if let Some(v) = lower.strip_prefix("content-length: ") {
                    content_length = v.trim().parse().unwrap_or(0);
                }
            }
            let mut sink = vec![0; content_length];
            let _ = reader.read_exact(&mut sink);
            log.lock().unwrap().push(line.trim().to_string());
            let status = statuses[i.min(statuses.len() - 1)];
            let head = line.starts_with("HEAD");
            let (code, payload, extra) = match (status, range) {
                (200, Some((a, b))) => {
                    let b = b.min(body.len() - 1);
                    (
                        206,
                        body[a..=b].to_vec(),
                        format!("Content-Range: bytes {a}-{b}/{}\r\n", body.len()),
                    )
                }
                (200, None) => (200, body.clone(), String::new()),
                (s, _) => (s, Vec::new(), String::new()),
            };
            let reason = match code {
                200 => "OK",
                206 => "Partial Content",
                403 => "Forbidden",
                404 => "Not Found",
                _ => "Service Unavailable",
            };
            let len = if head && code == 200 {
                body.len()
            } else {
                payload.len()
            };
            let _ = write!(
                conn,
                "HTTP/1.1 {code} {reason}\r\nContent-Length: {len}\r\n{extra}\
                 Last-Modified: Tue, 01 Sep 2026 00:00:00 GMT\r\nETag: \"v1\"\r\n\
                 Connection: close\r\n\r\n"
            );
            if !head {
                let _ = conn.write_all(&payload);
            }
        }
    });
    (base, seen)
}

fn open(url: &str) -> Result<(ObjectSource, bytes::Bytes), SourceError> {
    ObjectSource::open_with_head(&Clients::new(4), &locate(url).unwrap(), 64)
}

#[test]
fn not_found_names_the_url() {
    let (base, _) = serve(vec![404], Vec::new());
    let url = format!("{base}/archive/missing.nc");
    let e = open(&url).err().unwrap();
    assert!(e.is_not_found(), "{e}");
    assert_eq!(e.to_string(), format!("{url}: not found"));
}

#[test]
fn forbidden_names_the_url_and_the_status() {
    let (base, seen) = serve(vec![403], Vec::new());
    let url = format!("{base}/archive/secret.nc");
    let e = open(&url).err().unwrap();
    let text = e.to_string();
    assert!(text.starts_with(&format!("{url}: ")), "{text}");
    assert!(text.contains("403"), "{text}");
    assert!(!e.is_not_found());
    // A refusal is not retried.
    let gets = seen.lock().unwrap().len();
    assert!(gets <= 2, "{gets} requests for a 403");
}

#[test]
fn transient_errors_are_retried() {
    let body: Vec<u8> = (0..1000u32).map(|i| (i % 251) as u8).collect();
    let (base, seen) = serve(vec![503, 503, 200], body.clone());
    let url = format!("{base}/archive/a.nc");
    let (src, head) = open(&url).unwrap();
    assert_eq!(head, body[..64]);
    assert_eq!(src.size(), 1000);
    assert_eq!(src.read(500..600).unwrap(), body[500..600]);
    let seen = seen.lock().unwrap();
    assert!(
        seen.len() >= 4 && seen[0].starts_with("GET"),
        "requests: {seen:?}"
    );
}
