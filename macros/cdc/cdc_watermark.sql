{#-
  Incremental watermarks of the silver CDC state models.

  A state model reads only staging rows whose `bronze_commit_time` is newer than its
  watermark, kept as the table property `lakehouse.cdc_watermark` of the state table
  itself. A post-hook sets it only after the model's main statement has succeeded: a run
  killed midway never advances it, and the next run re-reads the same bronze commits;
  reprocessing is idempotent because the dedupe is by source position. Keeping it in the
  table's own metadata (not in a shared table) means no two models ever write the same
  files, and a dropped or fully refreshed table starts from scratch with its watermark.
-#}

{#- Name of the table property holding the watermark. -#}
{% macro cdc_watermark_property() -%}
    {{ return('lakehouse.cdc_watermark') }}
{%- endmacro %}


{#-
  The `lakehouse.*` table properties of `relation` as a dict of strings, read without a
  statement from the `information` dbt's relation cache holds for it (the output of a
  `show table extended` of its schema: for the run's own schemas taken by dbt before any
  model started; for bronze by the on-run-start hook cdc_cache_sources, or else by the
  run's first lookup, which dbt then caches), or with `show tblproperties` when the cache
  has no information on it; {} when the relation does not exist (or was dropped during
  this run, e.g. by a full refresh).
  A cached value is never newer than the table's: for a watermark that can only mean
  re-reading bronze commits, which the dedupe (by source position) makes harmless; for
  a synced instant, a window that ends earlier, the rest of which the next run reads.
-#}
{% macro cdc_table_properties(relation) -%}
    {%- set properties = {} -%}
    {%- if not execute -%}
        {{ return(properties) }}
    {%- endif -%}
    {%- set cached = adapter.get_relation(
        database=relation.database, schema=relation.schema, identifier=relation.identifier) -%}
    {%- if cached is none -%}
        {{ return(properties) }}
    {%- endif -%}
    {%- if cached.information -%}
        {%- set line = modules.re.search('(?m)^Table Properties: \\[(.*)\\]$', cached.information) -%}
        {%- for key, value in modules.re.findall(
                '(?:^|, )(lakehouse\\.[A-Za-z_.]+)=([^,]*)', line.group(1) if line else '') -%}
            {%- do properties.update({key: value}) -%}
        {%- endfor -%}
    {%- else -%}
        {%- do properties.update(cdc_current_table_properties(relation)) -%}
    {%- endif -%}
    {{ return(properties) }}
{%- endmacro %}


{#- The `lakehouse.*` table properties of `relation` as they are now (`show tblproperties`). -#}
{% macro cdc_current_table_properties(relation) -%}
    {%- set properties = {} -%}
    {%- for row in run_query('show tblproperties ' ~ relation).rows -%}
        {%- if row[0].startswith('lakehouse.') -%}
            {%- do properties.update({row[0]: row[1]}) -%}
        {%- endif -%}
    {%- endfor -%}
    {{ return(properties) }}
{%- endmacro %}


{#- The watermark of `relation` as a SQL string literal ('' when none is recorded). -#}
{% macro cdc_watermark(relation) -%}
    {%- if not execute -%}
        {{ return("''") }}
    {%- endif -%}
    {%- set watermark = cdc_table_properties(relation).get(cdc_watermark_property(), '') -%}
    {%- if not modules.re.fullmatch('[0-9]*', watermark) -%}
        {%- do exceptions.raise_compiler_error(
            relation ~ ": table property " ~ cdc_watermark_property() ~ " is not a Hudi instant: " ~ watermark) -%}
    {%- endif -%}
    {{ return("'" ~ watermark ~ "'") }}
{%- endmacro %}


{#- Name of the table property holding the number of base-layer rows. -#}
{% macro cdc_base_rows_property() -%}
    {{ return('lakehouse.cdc_base_rows') }}
{%- endmacro %}


{#- Name of the table property counting incremental runs since the last compaction check. -#}
{% macro cdc_unchecked_runs_property() -%}
    {{ return('lakehouse.cdc_unchecked_runs') }}
{%- endmacro %}


{#-
  The upper bound of an incremental run: the synced instant of the one bronze source
  upstream of the current model (the table property `lakehouse.synced_instant` the
  ingestion's catalog sync keeps on every bronze view), as a string; none when the model
  has no such source or more than one (then the run reads every newer commit and the
  post-hook derives the watermark from the data, as before).

  A bronze view shows exactly the commits up to its synced instant, and a Hudi table's
  instants grow monotonically, so "commits in (watermark, synced instant]" is a complete,
  fixed window: a sync that lands while the run is under way only adds commits above it,
  which the next run reads. Read from dbt's relation cache (cdc_table_properties), which
  the on-run-start hook cdc_cache_sources fills with one listing of the bronze schema
  (`show table extended`, no job), so seven state models cost one listing, not seven
  `show tblproperties`. The instant is then the one synced when the run started; a sync
  that lands later is read by the next run.
-#}
{% macro cdc_source_instant() -%}
    {#- unit tests have no graph: they test the window through an override of this macro -#}
    {%- if not execute or model.unique_id not in (graph.get('nodes') or {}) -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set source_ids = cdc_upstream_sources(model.unique_id) | unique | list -%}
    {%- if source_ids | length != 1 -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set source_node = graph.sources[source_ids[0]] -%}
    {%- set relation = api.Relation.create(
        database=source_node.database, schema=source_node.schema, identifier=source_node.identifier) -%}
    {%- set instant = cdc_table_properties(relation).get('lakehouse.synced_instant', '') -%}
    {{ return(instant if modules.re.fullmatch('[0-9]+', instant) else none) }}
{%- endmacro %}


{#- unique_ids of the sources upstream of node `node_id` (recursively through models). -#}
{% macro cdc_upstream_sources(node_id) -%}
    {%- set found = [] -%}
    {%- for upstream in graph.nodes[node_id].depends_on.nodes -%}
        {%- if upstream.startswith('source.') -%}
            {%- do found.append(upstream) -%}
        {%- elif upstream in graph.nodes -%}
            {%- do found.extend(cdc_upstream_sources(upstream)) -%}
        {%- endif -%}
    {%- endfor -%}
    {{ return(found) }}
{%- endmacro %}


{#-
  The bronze window an incremental state model reads, written into its compiled SQL as
  the comment `/* lakehouse.cdc_window (<watermark>, <upper bound>] */` next to the
  filter, so the materialization (which skips a model whose window is empty) and the
  post-hook (which records the upper bound as the new watermark) act on exactly the
  window the query read. cdc_window_of() reads it back: (watermark, upper bound), or
  none when the compiled SQL has no window (no known upper bound, or not incremental).
-#}
{% macro cdc_window_comment(watermark, upper_bound) -%}
    /* lakehouse.cdc_window ({{ watermark }}, {{ upper_bound }}] */
{%- endmacro %}

{% macro cdc_window_of(compiled_sql) -%}
    {%- set match = modules.re.search(
        '/\\* lakehouse\\.cdc_window \\(([0-9]*), ([0-9]+)\\] \\*/', compiled_sql or '') -%}
    {{ return((match.group(1), match.group(2)) if match else none) }}
{%- endmacro %}


{#-
  post-hook of a state model: record the newest bronze commit it now holds, and on
  parquet compact the table when its delta layer has outgrown the base layer.

  - An incremental run with a known window (cdc_window_of): the new watermark is the
    window's upper bound, and no query is needed. The delta layer's size is checked
    (one `count`) every var('silver_compaction_check_every') such runs only, counted in
    the table property `lakehouse.cdc_unchecked_runs`: compaction is an optimisation, and
    the check would otherwise be a Spark job on every run.
  - Other incremental runs on parquet: only the delta layer changed and every base row
    comes from a commit at or before the previous watermark, so the new watermark is the
    larger of the previous one and the delta's newest commit: the base layer is not
    scanned.
  - Full refreshes (and hudi runs without a window): the newest commit in the table.
  The base layer's row count is kept in a table property (set by full refreshes and
  compactions) for the compaction rule (var('silver_compaction_ratio')).
-#}
{% macro record_cdc_watermark() -%}
    {%- set watermark = '' -%}
    {%- set base_rows = 0 -%}
    {%- set unchecked_runs = 0 -%}
    {%- if execute -%}
        {#- the properties before this run's main statement (see cdc_table_properties) -#}
        {%- set properties = cdc_table_properties(this) -%}
        {%- set previous = properties.get(cdc_watermark_property(), '') -%}
        {%- set window = cdc_window_of(model.compiled_code) if previous != '' else none -%}
        {%- set layered = previous != '' and var('table_format', 'parquet') != 'hudi' -%}
        {%- set base_rows = properties.get(cdc_base_rows_property(), '0') | int -%}
        {%- if window is not none -%}
            {%- set watermark = window[1] -%}
            {%- set unchecked_runs = properties.get(cdc_unchecked_runs_property(), '0') | int + 1 -%}
            {%- if layered and unchecked_runs >= var('silver_compaction_check_every') -%}
                {%- set delta_rows = run_query(
                    "select count(*) from " ~ this ~ " where state_layer = 'delta'").rows[0][0] -%}
                {%- set base_rows = cdc_compact_if_outgrown(this, delta_rows, base_rows) -%}
                {%- set unchecked_runs = 0 -%}
            {%- endif -%}
        {%- elif layered -%}
            {%- set row = run_query(
                "select greatest('" ~ previous ~ "', coalesce(max(bronze_commit_time), '')), count(*) from "
                ~ this ~ " where state_layer = 'delta'").rows[0] -%}
            {%- set watermark = row[0] -%}
            {%- set base_rows = cdc_compact_if_outgrown(this, row[1], base_rows) -%}
        {%- else -%}
            {%- set row = run_query("select coalesce(max(bronze_commit_time), ''), count(*) from " ~ this).rows[0] -%}
            {%- set watermark = row[0] -%}
            {%- set base_rows = row[1] -%}
        {%- endif -%}
    {%- endif -%}
    alter table {{ this }} set tblproperties (
        '{{ cdc_watermark_property() }}' = '{{ watermark }}',
        '{{ cdc_base_rows_property() }}' = '{{ base_rows }}',
        '{{ cdc_unchecked_runs_property() }}' = '{{ unchecked_runs }}'
    )
{%- endmacro %}


{#-
  Compacts `relation` (compact_cdc_state) when its delta layer holds more than
  var('silver_compaction_ratio') of the base layer's rows; returns the base layer's row
  count afterwards.
-#}
{% macro cdc_compact_if_outgrown(relation, delta_rows, base_rows) -%}
    {%- if delta_rows > 0 and delta_rows > var('silver_compaction_ratio') * base_rows -%}
        {%- set compacted_rows = compact_cdc_state(relation) -%}
        {%- do log(relation ~ ': compacted ' ~ delta_rows ~ ' delta rows; base now ' ~ compacted_rows ~ ' rows',
                   info=True) -%}
        {{ return(compacted_rows) }}
    {%- endif -%}
    {{ return(base_rows) }}
{%- endmacro %}


{#-
  on-run-start hook: puts the bronze views in dbt's relation cache with one listing
  (`show table extended in <bronze schema>`), before any model starts, when the run
  builds CDC state models (tag `cdc_state`: cdc_state on parquet, incremental on hudi)
  incrementally. Each such model reads its bronze source's synced
  instant from the cache (cdc_source_instant); without this hook the first models of the
  run list the bronze schema concurrently, each on its own connection. Renders nothing,
  so dbt runs no statement for the hook itself.
-#}
{% macro cdc_cache_sources() -%}
    {%- if execute and not flags.FULL_REFRESH -%}
        {%- set listed = [] -%}
        {%- for unique_id in selected_resources -%}
            {%- set node = graph.nodes.get(unique_id) -%}
            {%- if node is not none and 'cdc_state' in node.tags -%}
                {%- for source_id in cdc_upstream_sources(unique_id) -%}
                    {%- set source_node = graph.sources[source_id] -%}
                    {%- set schema_key = (source_node.database, source_node.schema) -%}
                    {%- if schema_key not in listed -%}
                        {%- do listed.append(schema_key) -%}
                        {%- do adapter.get_relation(database=source_node.database,
                                                    schema=source_node.schema,
                                                    identifier=source_node.identifier) -%}
                    {%- endif -%}
                {%- endfor -%}
            {%- endif -%}
        {%- endfor -%}
    {%- endif -%}
{%- endmacro %}
