//! The one error type of the git queries: client mistakes apart from internal failures.

/// Why a git query failed.
#[derive(Debug, thiserror::Error)]
pub enum GitError {
    /// The client named something that does not exist (unknown revision, path, object).
    #[error("{0}")]
    NotFound(String),
    /// The client's input can never be valid (bad hex, option-like revision).
    #[error("{0}")]
    BadRequest(String),
    /// The repository could not answer (corrupt or unreadable objects): what failed, and the
    /// error that made it fail when there is one.
    #[error("{context}")]
    Internal {
        context: String,
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync + 'static>>,
    },
}

impl GitError {
    /// An internal error caused by `e`, described by `e`'s own message.
    pub fn internal(e: impl std::error::Error + Send + Sync + 'static) -> GitError {
        GitError::Internal {
            context: e.to_string(),
            source: Some(Box::new(e)),
        }
    }

    /// An internal error caused by `e` while doing what `context` says.
    pub fn internal_in(
        context: impl Into<String>,
        e: impl std::error::Error + Send + Sync + 'static,
    ) -> GitError {
        GitError::Internal {
            context: context.into(),
            source: Some(Box::new(e)),
        }
    }

    /// An internal error with no underlying error (an inconsistency found by us).
    pub fn internal_msg(message: impl Into<String>) -> GitError {
        GitError::Internal {
            context: message.into(),
            source: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::GitError;
    use std::error::Error;

    #[test]
    fn internal_errors_keep_their_cause() {
        let io = std::io::Error::other("disk on fire");
        let e = GitError::internal(io);
        assert_eq!(e.to_string(), "disk on fire");
        let source = e.source().expect("a source");
        assert!(source.downcast_ref::<std::io::Error>().is_some());

        let e = GitError::internal_in("reading pack", std::io::Error::other("short read"));
        assert_eq!(e.to_string(), "reading pack");
        assert_eq!(e.source().unwrap().to_string(), "short read");

        let e = GitError::internal_msg("too large");
        assert_eq!(e.to_string(), "too large");
        assert!(e.source().is_none());
        assert_eq!(GitError::NotFound("x".into()).to_string(), "x");
    }
}
