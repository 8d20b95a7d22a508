//! The title a process gave itself (record TITLE, preload/title.c): servers rewrite their
//! argument area to name each process's role (`postgres: checkpointer`, `postgres: postgres
//! bench [local] idle`), which the PROCESS record's command line, taken as the process started,
//! does not show. The last TITLE record of a file wins.

use super::format::*;
use super::reader::{Fields, ProfileError, err};

/// A TITLE record's words: the argument area as the process rewrote it, split at its NULs,
/// empty words (the area's padding) left out.
pub(super) fn parse_title(payload: &[u8], pos: usize) -> Result<Vec<String>, ProfileError> {
    if payload.len() < TITLE_SIZE {
        return err(pos, "title record too short");
    }
    let mut f = Fields::new(payload);
    let _mono_ns = f.u64();
    let len = f.u32() as usize;
    let reserved = f.u32();
    if reserved != 0 || len == 0 || len > TITLE_MAX || TITLE_SIZE + len != payload.len() {
        return err(pos, "inconsistent title record");
    }
    Ok(words(&payload[TITLE_SIZE..]))
}

/// NUL-separated words, without the empty ones.
fn words(bytes: &[u8]) -> Vec<String> {
    bytes
        .split(|&b| b == 0)
        .map(|w| String::from_utf8_lossy(w).trim().to_string())
        .filter(|w| !w.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(words: &[u8], reserved: u32) -> Vec<u8> {
        let mut p = Vec::new();
        p.extend_from_slice(&7u64.to_le_bytes());
        p.extend_from_slice(&(words.len() as u32).to_le_bytes());
        p.extend_from_slice(&reserved.to_le_bytes());
        p.extend_from_slice(words);
        p
    }

    #[test]
    fn a_title_is_read_as_its_words_without_the_padding() {
        let r = record(b"postgres: checkpointer \0\0\0", 0);
        assert_eq!(parse_title(&r, 0).unwrap(), vec!["postgres: checkpointer"]);
        let r = record(b"nginx: worker process\0-g\0", 0);
        assert_eq!(
            parse_title(&r, 0).unwrap(),
            vec!["nginx: worker process", "-g"]
        );
    }

    #[test]
    fn a_damaged_title_record_is_an_error() {
        assert!(parse_title(&record(b"x", 1), 0).is_err());
        assert!(parse_title(&record(b"", 0), 0).is_err());
        let mut r = record(b"abc", 0);
        r.pop();
        assert!(parse_title(&r, 0).is_err());
        assert!(parse_title(&[0u8; 4], 0).is_err());
    }
}
