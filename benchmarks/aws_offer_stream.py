"""Benchmark: stream a generated AWS-shaped EC2 offer file (JSON form) through the parser.

    python benchmarks/aws_offer_stream.py                # 2 GB into a temp dir
    python benchmarks/aws_offer_stream.py --size-mb 300
    python benchmarks/aws_offer_stream.py --path /tmp/offer.json --keep

Prints the file size, elapsed seconds, MB/s and peak RSS (targets: < 500 MB, >= 50 MB/s).
The file mimics the real one: `products` first (mostly non-accelerator instances, and each
accelerator instance type in many OS/tenancy variants), then `terms.OnDemand` and
`terms.Reserved` for every product.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pipelines.lib.prices.aws import BACKEND, parse_aws_offer  # noqa: E402

PLAIN_TYPES = [f"{family}.{size}" for family in ("m5", "c5", "r5", "m6i", "c6g", "r7i", "t3")
               for size in ("large", "xlarge", "2xlarge", "4xlarge", "8xlarge", "16xlarge")]
GPU_TYPES = [("p5.48xlarge", "8", "55.04"), ("p4d.24xlarge", "8", "21.957642"),
             ("p4de.24xlarge", "8", "27.44705"), ("trn1.32xlarge", "0", "21.5")]
VARIANTS = [("Linux", "Shared", "NA", "Used"), ("Windows", "Shared", "NA", "Used"),
            ("RHEL", "Shared", "NA", "Used"), ("Linux", "Dedicated", "NA", "Used"),
            ("Linux", "Shared", "SQL Std", "Used"), ("Linux", "Shared", "NA", "UnusedCapacityReservation")]
RESERVED = [("1yr", "standard", "No Upfront"), ("3yr", "standard", "No Upfront"),
            ("1yr", "convertible", "All Upfront")]


def _product(sku: str, instance_type: str, gpu: str, variant: tuple[str, str, str, str]) -> str:
    os_name, tenancy, software, capacity = variant
    family = "GPU instance" if gpu != "0" else ("Machine Learning ASIC Instances"
                                                 if instance_type.startswith("trn") else "General purpose")
    return json.dumps({
        "sku": sku, "productFamily": "Compute Instance",
        "attributes": {
            "operatingSystem": os_name, "tenancy": tenancy, "preInstalledSw": software,
            "capacitystatus": capacity, "licenseModel": "No License required", "regionCode": "us-east-1",
            "location": "US East (N. Virginia)", "locationType": "AWS Region", "servicecode": "AmazonEC2",
            "servicename": "Amazon Elastic Compute Cloud", "operation": "RunInstances", "marketoption": "OnDemand",
            "currentGeneration": "Yes", "instanceType": instance_type, "instanceFamily": family,
            "vcpu": "96", "memory": "384 GiB", "gpu": gpu, "networkPerformance": "100 Gigabit",
            "physicalProcessor": "Intel Xeon Platinum 8275L", "clockSpeed": "3 GHz",
            "storage": "EBS only", "usagetype": f"BoxUsage:{instance_type}",
        },
    })


def _on_demand(sku: str, price: str) -> str:
    code = f"{sku}.JRTCKXETXF"
    return json.dumps({code: {
        "offerTermCode": "JRTCKXETXF", "sku": sku, "effectiveDate": "2026-08-01T00:00:00Z",
        "priceDimensions": {f"{code}.6YS6EN2CT7": {
            "rateCode": f"{code}.6YS6EN2CT7", "description": f"${price} per On Demand Linux Instance Hour",
            "beginRange": "0", "endRange": "Inf", "unit": "Hrs", "pricePerUnit": {"USD": price}, "appliesTo": []}},
        "termAttributes": {}}})


def _reserved(sku: str, price: str) -> str:
    terms = {}
    for i, (lease, offering, purchase) in enumerate(RESERVED):
        code = f"{sku}.RESV{i:06d}"
        terms[code] = {
            "offerTermCode": f"RESV{i:06d}", "sku": sku, "effectiveDate": "2026-08-01T00:00:00Z",
            "priceDimensions": {f"{code}.6YS6EN2CT7": {
                "rateCode": f"{code}.6YS6EN2CT7", "description": "Linux reserved hourly", "beginRange": "0",
                "endRange": "Inf", "unit": "Hrs", "pricePerUnit": {"USD": f"{float(price) * 0.6:.6f}"},
                "appliesTo": []}},
            "termAttributes": {"LeaseContractLength": lease, "OfferingClass": offering, "PurchaseOption": purchase}}
    return json.dumps(terms)


def _spec(i: int, gpu_every: int) -> tuple[str, str, str, str, tuple[str, str, str, str]]:
    """(sku, instance type, gpu count, price, variant) of product number i."""
    sku = f"SYN{i:013d}"
    if i % gpu_every == 0:
        instance_type, gpu, price = GPU_TYPES[(i // gpu_every) % len(GPU_TYPES)]
        variant = VARIANTS[(i // gpu_every // len(GPU_TYPES)) % len(VARIANTS)]
        return sku, instance_type, gpu, price, variant
    return sku, PLAIN_TYPES[i % len(PLAIN_TYPES)], "0", "0.192", VARIANTS[i % len(VARIANTS)]


def _write_section(out, n: int, gpu_every: int, render) -> None:
    for i in range(n):
        sku, instance_type, gpu, price, variant = _spec(i, gpu_every)
        out.write(("," if i else "") + f'"{sku}":' + render(sku, instance_type, gpu, price, variant))


def write_offer_file(path: Path, size_mb: float, gpu_share: float = 0.02) -> dict[str, int]:
    """Write an AWS-shaped offer file of about `size_mb` MB (streamed, little memory); returns counts."""
    target = int(size_mb * 1e6)
    # why ~2.5 kB: one product (~0.9 kB) + its on-demand (~0.5 kB) and reserved terms (~1.2 kB)
    gpu_every = max(1, int(1 / gpu_share))
    n = max(gpu_every * len(GPU_TYPES) * len(VARIANTS), int(target / 2500))
    with path.open("w", encoding="utf-8", buffering=1 << 20) as out:
        out.write('{"formatVersion":"v1.0","disclaimer":"synthetic benchmark file","offerCode":"AmazonEC2",'
                  '"version":"SYNTHETIC","publicationDate":"2026-08-26T00:00:00Z","products":{')
        _write_section(out, n, gpu_every, lambda s, t, g, p, v: _product(s, t, g, v))
        out.write('},"terms":{"OnDemand":{')
        _write_section(out, n, gpu_every, lambda s, t, g, p, v: _on_demand(s, p))
        out.write('},"Reserved":{')
        _write_section(out, n, gpu_every, lambda s, t, g, p, v: _reserved(s, p))
        out.write("}}}")
    specs = [_spec(i, gpu_every) for i in range(0, n, gpu_every)]
    accelerators = [x for x in specs if x[2] != "0" or x[1].startswith("trn")]
    return {"products": n, "accelerator_products": len(accelerators),
            "linux_on_demand": sum(1 for x in accelerators if x[4] == VARIANTS[0])}


def peak_rss_mb() -> float:
    # ru_maxrss is KiB on Linux, bytes on macOS
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1 << 20) if sys.platform == "darwin" else peak / 1024


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size-mb", type=float, default=2000.0)
    parser.add_argument("--path", type=Path, help="where to write the file (default: a temp dir)")
    parser.add_argument("--keep", action="store_true", help="keep the generated file")
    parser.add_argument("--no-reserved", action="store_true", help="skip terms.Reserved")
    args = parser.parse_args(argv)
    tmp = None
    path = args.path
    if path is None:
        tmp = tempfile.TemporaryDirectory(prefix="aws-offer-bench-")
        path = Path(tmp.name) / "offer.json"
    try:
        start = time.perf_counter()
        counts = write_offer_file(path, args.size_mb)
        size = path.stat().st_size
        print(f"generated {size / 1e6:.0f} MB in {time.perf_counter() - start:.1f} s: {counts}")
        rss_before = peak_rss_mb()
        start = time.perf_counter()
        with path.open("rb") as stream:
            result = parse_aws_offer(stream, file=path.name, include_reserved=not args.no_reserved)
        elapsed = time.perf_counter() - start
        print(f"ijson backend: {getattr(BACKEND, 'backend_name', getattr(BACKEND, '__name__', BACKEND))}")
        print(f"parsed: {result}")
        print(f"elapsed {elapsed:.1f} s, {size / 1e6 / elapsed:.1f} MB/s, "
              f"peak RSS {peak_rss_mb():.0f} MB (before parsing {rss_before:.0f} MB)")
    finally:
        if tmp is not None and not args.keep:
            tmp.cleanup()
        elif args.path is None and args.keep:
            print(f"kept {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
