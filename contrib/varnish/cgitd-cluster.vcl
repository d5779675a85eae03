# Several cgitd instances behind one Varnish 7.x, with ESI. Declare the instances and a shard
# director named `cgitd` in your own VCL, then include this file (it includes cgitd-esi.vcl from
# the same directory):
#
#     vcl 4.1;
#     import directors;
#     probe cgitd_up { .url = "/"; .interval = 5s; .timeout = 2s; }
#     backend one { .host = "10.0.0.1"; .port = "8080"; .probe = cgitd_up; }
#     backend two { .host = "10.0.0.2"; .port = "8080"; .probe = cgitd_up; }
#     sub vcl_init {
#         new cgitd = directors.shard();
#         cgitd.add_backend(one);
#         cgitd.add_backend(two);
#         cgitd.reconfigure();
#     }
#     include "/path/to/cgitd-cluster.vcl";
#
# What it adds to cgitd-esi.vcl:
# - esi-diff fragments are hashed on what follows "/esi-diff/" (the commit range and options, not
#   the repository or the host), as cgitd-esi.vcl does, and a miss goes to the instance that this
#   same key shards to: a commit's diff is rendered once for the whole cluster and every fork, and
#   after an eviction it goes back to the instance whose own fragment cache still holds it.
# - Every other request is sharded on its repository (the path before the page name), so each
#   instance keeps warm handles and ref snapshots for its share of the repositories only. When an
#   instance is down (probe), its repositories move to the next one.
# - Nothing here depends on which instance fetched an object: cgitd derives ETags and bytes from
#   content only (ref values, a hash of the configuration, render options), so an object fetched
#   through one instance is revalidated (If-None-Match, 304) by whichever instance gets the request.

sub vcl_recv {
    if (req.url ~ "^[^?]*/esi-diff/") {
        set req.http.X-Cgitd-Shard = regsub(req.url, "^[^?]*/esi-diff/", "esi-diff/");
    } else {
        set req.http.X-Cgitd-Shard = regsub(
            regsub(req.url, "\?.*$", ""),
            "^(.*?)/(about|summary|refs|log|tree|blob|plain|commit|diff|rawdiff|patch|tag|atom|snapshot|blame|stats|info|objects|HEAD)(/.*)?$",
            "\1");
    }
    set req.backend_hint = cgitd.backend(by=KEY, key=cgitd.key(req.http.X-Cgitd-Shard));
    unset req.http.X-Cgitd-Shard;
}

include "./cgitd-esi.vcl";
