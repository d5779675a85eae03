#!/usr/bin/env python3
"""Prints the number of HTML5 parse errors (html5lib, as a strict parser would report them) of
each page given as NAME=URL, one line each; with -v also the first errors with their positions."""

import sys
import urllib.request

import html5lib


def errors(url):
    with urllib.request.urlopen(url) as response:
        body = response.read()
    parser = html5lib.HTMLParser(strict=False)
    parser.parse(body, transport_encoding="utf-8")
    return parser.errors


def main(args):
    verbose = "-v" in args
    total = 0
    for arg in (a for a in args if a != "-v"):
        name, url = arg.split("=", 1)
        found = errors(url)
        total += len(found)
        print(f"{name:8} {len(found)}")
        if verbose:
            for (line, col), code, data in found[:10]:
                print(f"    {line}:{col} {code} {data}")
    return 1 if total else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
