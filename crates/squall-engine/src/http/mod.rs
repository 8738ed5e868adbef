//! HTTP: requests prepared once (`request`), the lean HTTP/1.1 exchange (`h1`) and HTTP/2 over the
//! `h2` crate (`h2`).

pub mod h1;
pub mod h2;
pub mod request;
