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
                failed: None,
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
    /// What the read after the sniffed bytes failed with, for the next
    /// read (a reset is reported once).
    failed: Option<io::Error>,
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
                // yet still answers with the sniffed bytes; an error is the
                // next read's answer.
                if let Poll::Ready(Err(err)) = Pin::new(&mut self.io).poll_read(cx, buf) {
                    self.failed = Some(err);
                }
            }
            return Poll::Ready(Ok(()));
        }
        if let Some(err) = self.failed.take() {
            return Poll::Ready(Err(err));
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

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    /// Sniffed, then read as hyper reads a head: into one large buffer.
    async fn sniffed(sent: &[u8]) -> (AgreedProtocol, Vec<u8>) {
        let (mut client, server) = tokio::io::duplex(64 << 10);
        client.write_all(sent).await.unwrap();
        let (mut io, protocol) = sniff(server).await.unwrap();
        let mut first = vec![0u8; 8192];
        let n = io.read(&mut first).await.unwrap();
        first.truncate(n);
        (protocol, first)
    }

    #[tokio::test]
    async fn the_first_read_hands_over_the_sniffed_bytes_and_what_followed() {
        // A head read in two (the sniffed bytes, then the rest) made hyper
        // double its read buffer for the connection's life.
        let head = b"POST /agui HTTP/1.1\r\nhost: gateway\r\ncontent-length: 2\r\n\r\n{}";
        assert_eq!(sniffed(head).await, (AgreedProtocol::Http1, head.to_vec()));
        let mut h2 = PREFACE.to_vec();
        h2.extend_from_slice(&[0, 0, 0, 4, 0, 0, 0, 0, 0]);
        assert_eq!(sniffed(&h2).await, (AgreedProtocol::Http2, h2.clone()));
    }

    #[tokio::test]
    async fn a_peer_gone_after_the_sniffed_bytes_is_read_as_such() {
        let (mut client, server) = tokio::io::duplex(1024);
        client.write_all(b"GET").await.unwrap();
        drop(client);
        let (mut io, protocol) = sniff(server).await.unwrap();
        assert_eq!(protocol, AgreedProtocol::Http1);
        let mut buf = vec![0u8; 64];
        assert_eq!(io.read(&mut buf).await.unwrap(), 3);
        assert_eq!(&buf[..3], b"GET");
        assert_eq!(io.read(&mut buf).await.unwrap(), 0);
    }
}
