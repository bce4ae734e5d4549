//! The egress proxy against real parts: a fake HTTPS API on loopback, real HTTP clients
//! (Python urllib, requests, httpx, aiohttp; curl; Node fetch, https, axios) as children
//! started with a listener's environment, real TLS both ways, `/proc` for the child's
//! other connections.
#![allow(clippy::too_many_lines)]

mod clients;
mod connections;
mod environment;
mod forwarding;
mod gaps;
mod support;
