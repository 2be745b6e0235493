"""The analyst docs site: build (dbt docs generate --static), serve on 127.0.0.1, publish to S3.

Public API::

    from lakehouse.docs_site import build_site, publish_site, site_dir
    from lakehouse.docs_site.server import serve_forever, start_detached, stop
"""

from lakehouse.docs_site.publish import PublishError, publish_site
from lakehouse.docs_site.site import DocsBuildError, build_site, site_dir

__all__ = ["DocsBuildError", "PublishError", "build_site", "publish_site", "site_dir"]
