"""Monitoring: `scrape` decides how Kueue's metrics are scraped, `dashboard` the Grafana dashboard
(pure); `component` creates the Azure Monitor workspace, Managed Grafana and the scrape objects
(Monitoring)."""
