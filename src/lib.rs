//! cgitd: a resident, cgit-compatible git web frontend.

pub mod cache;
pub mod config;
pub mod filter;
pub mod git;
pub mod http;
pub mod pages;
pub mod repos;
pub mod request;
