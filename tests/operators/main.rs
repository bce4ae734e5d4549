//! The operator's half: alert and recording rules (promtool), dashboards (structure and metric
//! names), deployment manifests (compose, kustomize), and the whole stack end to end against
//! real Prometheus and Alertmanager servers on loopback. Tests that need promtool, prometheus,
//! alertmanager, kubectl, Python's validators or PostgreSQL print why they skip when absent;
//! `HINTAUDIT_REQUIRE_ALL=1` (CI) makes every one mandatory.
#![allow(clippy::too_many_lines)] // a test tells its scenario in order: clippy.toml

mod capture;
mod dashboards;
mod empty_panels;
mod manifests;
mod promql;
mod rules;
mod servers;
mod stack;
mod support;
