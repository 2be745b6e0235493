"""The analyst docs site: build (dbt docs generate --static), serve on 127.0.0.1, publish to S3.

Public API::

    from ingestion.docs import build_site, publish_site, site_dir
    from ingestion.docs.server import serve_forever, start_detached, stop
"""

from ingestion.docs.publish import PublishError, publish_site
from ingestion.docs.site import DocsBuildError, build_site, site_dir

__all__ = ["DocsBuildError", "PublishError", "build_site", "publish_site", "site_dir"]
