//! The process's one I/O runtime: a small multi-threaded tokio runtime, created on first use
//! and kept for the life of the process. Every object-store request of vzarr runs on it; the
//! blocking functions of this crate spawn onto it and wait, so they may be called from any
//! thread that is not one of its own workers (rayon workers and threads of other runtimes
//! included).

use std::future::Future;
use std::sync::OnceLock;

use crate::SourceError;

/// Worker threads of the I/O runtime: requests are latency-bound, not CPU-bound.
const WORKERS: usize = 4;

/// The I/O runtime, started on first use.
pub fn runtime() -> Result<&'static tokio::runtime::Runtime, SourceError> {
    static RT: OnceLock<Result<tokio::runtime::Runtime, std::io::ErrorKind>> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(WORKERS)
            .thread_name("vzarr-io")
            .enable_all()
            .build()
            .map_err(|e| e.kind())
    })
    .as_ref()
    .map_err(|&kind| SourceError::Runtime {
        source: std::io::Error::new(kind, "cannot start the I/O runtime"),
    })
}

/// Runs `f` on the I/O runtime and waits for its result.
///
/// A panic inside `f` is resumed on the calling thread.
pub fn block_on<F, T>(f: F) -> Result<T, SourceError>
where
    F: Future<Output = Result<T, SourceError>> + Send + 'static,
    T: Send + 'static,
{
    let handle = runtime()?.spawn(f);
    match futures::executor::block_on(handle) {
        Ok(r) => r,
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(e) => Err(SourceError::Runtime {
            source: std::io::Error::other(e),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_futures_from_plain_and_rayon_like_threads() {
        assert_eq!(block_on(async { Ok(7) }).unwrap(), 7);
        std::thread::scope(|s| {
            for i in 0..4u64 {
                s.spawn(move || assert_eq!(block_on(async move { Ok(i * 2) }).unwrap(), i * 2));
            }
        });
        let e = block_on::<_, ()>(async {
            Err(SourceError::NotFound {
                url: "s3://b/k".into(),
            })
        })
        .unwrap_err();
        assert!(e.is_not_found());
    }
}
