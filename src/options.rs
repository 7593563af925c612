//! The command line of `utf8fs`, in the shape of other FUSE filesystems:
//! `utf8fs SOURCE MOUNTPOINT [-f] [-o OPT[,OPT…]]`.
//!
//! PLACEHOLDER: being written.
