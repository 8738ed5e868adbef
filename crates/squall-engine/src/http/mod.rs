//! HTTP: requests prepared once (`request`), the lean HTTP/1.1 exchange (`h1`), HTTP/2 over the
//! `h2` crate for scripted users (`h2`), and bench's own lean HTTP/2 (`h2lean`).

pub mod h1;
pub mod h2;
pub mod h2lean;
pub mod request;
