"""Task metrics. Every metric is a fraction in [0, 1] printed as a percentage, except those
named in PLAIN (printed as numbers)."""

PLAIN = {"vi", "crossing_brackets", "examples"}


def format_metric(name: str, value: float) -> str:
    return f"{value:.4g}" if name in PLAIN else f"{100 * value:.2f}%"


def format_metrics(metrics: dict[str, float]) -> str:
    return ", ".join(f"{name} {format_metric(name, value)}" for name, value in metrics.items())
