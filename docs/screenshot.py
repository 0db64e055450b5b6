"""A screenshot of the results page in headless Chromium (`make screenshot`):
python docs/screenshot.py results/paper/index.html docs/results_page.png

Debian's chromium (/usr/bin/chromium, `apt-get install chromium`) driven by playwright; every
request but the page itself is blocked. The shot is the top of the page at 1200 x 1400 pixels.
"""

import sys
from pathlib import Path

from playwright.sync_api import sync_playwright

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--no-first-run"]  # fmt: skip

page_file, out = Path(sys.argv[1]).resolve(), Path(sys.argv[2])
with sync_playwright() as pw:
    browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=FLAGS)
    context = browser.new_context(viewport={"width": 1200, "height": 1400})
    context.route("**/*", lambda route: route.continue_()
                  if route.request.url == page_file.as_uri() else route.abort())  # fmt: skip
    page = context.new_page()
    page.goto(page_file.as_uri())
    out.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(out))
    browser.close()
print(f"wrote {out}")
