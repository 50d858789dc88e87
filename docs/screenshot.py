"""Take the README's screenshot of ``seedsweep dashboard`` in headless Chromium.

    python docs/screenshot.py runs/classifier-cpu docs/dashboard.png
    python docs/screenshot.py runs/classifier-cpu docs/dashboard-statistics.png --start evp --height 2000

Starts the dashboard on a free local port, waits until every figure is drawn
(the importance figure included, which the dashboard computes in the
background), saves a screenshot of ``--height`` pixels from the top of the
page or from the element ``--start`` names, and stops the dashboard again.
Needs Debian's ``chromium`` (or ``--chromium PATH``).
"""

from __future__ import annotations

import argparse
import shutil
import socket
import subprocess
import sys
import time


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run_dir")
    ap.add_argument("out")
    ap.add_argument("--height", type=int, default=1500)
    ap.add_argument("--start", help="the id of the element the picture starts at (e.g. evp)")
    ap.add_argument("--chromium", default=shutil.which("chromium") or "/usr/bin/chromium")
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "seedsweep", "dashboard", args.run_dir, "--port", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise SystemExit("the dashboard did not start")
                time.sleep(0.2)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=args.chromium, args=["--no-sandbox", "--disable-gpu"])
            page = browser.new_page(viewport={"width": 1400, "height": args.height})
            page.goto(f"http://127.0.0.1:{port}/")
            page.wait_for_function("() => Array.from(document.querySelectorAll('.js-plotly-plot'))"
                                   ".filter(gd => gd.data && gd.data.length).length >= 6", timeout=60_000)
            page.wait_for_function("() => { const gd = document.querySelector('#importance .js-plotly-plot');"
                                   " return gd && gd.layout.meta && !gd.layout.meta.pending; }", timeout=120_000)
            page.wait_for_timeout(1500)
            top = 0
            if args.start:
                top = page.evaluate("id => document.getElementById(id).getBoundingClientRect().top + window.scrollY",
                                    args.start)
                page.set_viewport_size({"width": 1400, "height": int(top) + args.height})
                page.wait_for_timeout(1500)
            page.screenshot(path=args.out, clip={"x": 0, "y": top, "width": 1400, "height": args.height},
                            full_page=True)
            browser.close()
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
