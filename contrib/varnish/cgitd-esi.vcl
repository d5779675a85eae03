# cgitd behind Varnish 7.x with ESI. Include this file from your own VCL:
#
#     vcl 4.1;
#     backend default { .host = "127.0.0.1"; .port = "8080"; }
#     include "/path/to/cgitd-esi.vcl";
#
# What is cached where:
# - esi-diff fragments (the diffstat and diff of one commit range) are hashed on what follows
#   "/esi-diff/" only — ids and options, not the repository or the host — so a commit's diff is
#   fetched once and served for every fork. They are immutable (full ids only) and kept long.
# - Frames (commit and diff pages) and every other page are cached by their Cache-Control;
#   pages that name a branch rather than a full id are kept one second and then revalidated
#   with their ETag, so a push shows up at once.
# - Responses marked private (hidden or access-controlled repositories) are never stored.

sub vcl_recv {
    if (req.method != "GET" && req.method != "HEAD") {
        return (pass);
    }
    # Tell cgitd a surrogate will process <esi:include>.
    set req.http.Surrogate-Capability = "varnish=ESI/1.0";
    if (req.url ~ "^[^?]*/esi-diff/") {
        unset req.http.Cookie;
        unset req.http.Authorization;
        return (hash);
    }
}

sub vcl_hash {
    if (req.url ~ "^[^?]*/esi-diff/") {
        hash_data(regsub(req.url, "^[^?]*/esi-diff/", "esi-diff/"));
        return (lookup);
    }
}

sub vcl_backend_response {
    if (beresp.http.Surrogate-Control ~ "ESI/1.0") {
        unset beresp.http.Surrogate-Control;
        set beresp.do_esi = true;
    }
    if (beresp.http.Cache-Control ~ "private") {
        set beresp.uncacheable = true;
        set beresp.ttl = 0s;
        return (deliver);
    }
    if (bereq.url ~ "^[^?]*/esi-diff/" && beresp.status == 200) {
        set beresp.ttl = 365d;
        set beresp.grace = 30d;
    } elsif (beresp.http.Cache-Control !~ "immutable") {
        set beresp.ttl = 1s;
        set beresp.grace = 0s;
        set beresp.keep = 1h;
    }
}

sub vcl_deliver {
    if (obj.hits > 0) {
        set resp.http.X-Cache = "hit";
    } else {
        set resp.http.X-Cache = "miss";
    }
}
