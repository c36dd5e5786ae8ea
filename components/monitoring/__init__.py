"""Monitoring: how Kueue's metrics are scraped and the Grafana dashboard that shows them, decided as
plain data; the component creates the Azure Monitor workspace, Managed Grafana and the scrape
objects (or only a ServiceMonitor in kubeconfig mode)."""
