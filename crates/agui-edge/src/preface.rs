//! A clear-text connection's first bytes: the HTTP/2 preface (prior
//! knowledge) or HTTP/1.1, told apart without losing what was read.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, ReadBuf};

use crate::tls::AgreedProtocol;

/// The HTTP/2 connection preface (RFC 9113 3.4).
const PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// Reads until the bytes are not the HTTP/2 preface (HTTP/1.1, most often
/// at the first byte) or are all of it; what was read is read again by
/// the protocol that follows.
pub async fn sniff<I: AsyncRead + Unpin>(mut io: I) -> io::Result<(Prefixed<I>, AgreedProtocol)> {
    let mut seen = [0u8; PREFACE.len()];
    let mut len = 0;
    loop {
        let read = io.read(&mut seen[len..]).await?;
        if read == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        len += read;
        let protocol = if seen[..len] != PREFACE[..len] {
            AgreedProtocol::Http1
        } else if len == PREFACE.len() {
            AgreedProtocol::Http2
        } else {
            continue;
        };
        return Ok((
            Prefixed {
                seen,
                start: 0,
                len,
                io,
            },
            protocol,
        ));
    }
}

/// A connection whose first bytes were read already.
pub struct Prefixed<I> {
    seen: [u8; PREFACE.len()],
    start: usize,
    len: usize,
    io: I,
}

impl<I: AsyncRead + Unpin> AsyncRead for Prefixed<I> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if self.start < self.len {
            let take = (self.len - self.start).min(buf.remaining());
            let start = self.start;
            buf.put_slice(&self.seen[start..start + take]);
            self.start += take;
            if self.start == self.len && buf.remaining() > 0 {
                // What followed, in the same read: hyper reads a head into
                // 8 KiB, and a head that came in two reads (the sniffed
                // bytes, then the rest) made it grow that buffer to 16 KiB,
                // held for as long as the connection streams. Nothing there
                // yet (or an error, which the next read meets again) still
                // answers with the sniffed bytes.
                let _ = Pin::new(&mut self.io).poll_read(cx, buf);
            }
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl<I: AsyncWrite + Unpin> AsyncWrite for Prefixed<I> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}
