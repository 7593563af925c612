//! utf8fs: a FUSE passthrough filesystem that checks every file name component with a strict
//! UTF-8 decoder (RFC 3629 section 4), and its offline companion `utf8fsck`.
//!
//! The modules read top-down, one job each:
//! [`utf8`] (pure decoder) → [`policy`] (what a name may be) → [`mapping`] (backing name ⇄ shown
//! name, per mode) → [`fs`] (FUSE operations, inode table) → [`options`] (command line).

pub mod fs;
pub mod fsck;
pub mod mapping;
pub mod options;
pub mod policy;
pub mod utf8;
