#!/usr/bin/env python3
"""Generate the held-back memory-capture test set.

Writes session-01.jsonl .. session-16.jsonl (Claude Code transcript JSONL)
and gold.jsonl next to this script.  Everything random (uuids, ids,
timestamps, token counts) comes from a per-session seeded RNG, so a rerun
produces byte-identical files.

    python3 make_sessions.py           # write the files
    python3 make_sessions.py --check   # verify files on disk match + validate gold

Standard library only.
"""
import datetime as _dt
import json
import os
import random
import re
import sys
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
MODEL = "claude-sonnet-4-5-20250929"
B62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

# --------------------------------------------------------------------------
# tiny DSL
#   U(text)                 -> user line (typed by the person)
#   A(text)                 -> assistant line, text only (end_turn)
#   T(text, tool)           -> assistant line with optional text + tool_use,
#                              followed by a user line with the tool_result
# tool builders: read(), bash(), edit(), write(), grep(), glob()
# --------------------------------------------------------------------------


def U(text):
    return ("U", text)


def A(text):
    return ("A", text)


def T(text, tool):
    return ("T", text, tool)


def numbered(content, start=1):
    lines = content.split("\n")
    return "\n".join("%6d\u2192%s" % (i + start, l) for i, l in enumerate(lines))


def read(path, content, start=1, total=None):
    n = len(content.split("\n"))
    return {
        "name": "Read",
        "input": {"file_path": path} if start == 1 else {"file_path": path, "offset": start, "limit": n},
        "output": numbered(content, start),
        "result": {"type": "text", "file": {"filePath": path, "content": content, "numLines": n,
                                            "startLine": start, "totalLines": total or (start + n - 1)}},
    }


def bash(cmd, desc, stdout, stderr="", error=False):
    out = stdout if not stderr else (stdout + ("\n" if stdout else "") + stderr)
    res = {"stdout": stdout, "stderr": stderr, "interrupted": False, "isImage": False}
    if error:
        out = "Error: " + out
        res = "Error: " + (stdout + ("\n" if stdout and stderr else "") + stderr)
    return {"name": "Bash", "input": {"command": cmd, "description": desc},
            "output": out, "result": res, "is_error": error}


def edit(path, old, new, snippet=None):
    out = "The file %s has been updated." % path
    if snippet:
        out += " Here's the result of running `cat -n` on a snippet of the edited file:\n" + snippet
    return {"name": "Edit", "input": {"file_path": path, "old_string": old, "new_string": new},
            "output": out,
            "result": {"filePath": path, "oldString": old, "newString": new, "originalFile": None,
                       "structuredPatch": [], "userModified": False, "replaceAll": False}}


def write(path, content):
    return {"name": "Write", "input": {"file_path": path, "content": content},
            "output": "File created successfully at: %s" % path,
            "result": {"type": "create", "filePath": path, "content": content, "structuredPatch": []}}


def grep(pattern, path, output, mode="content"):
    n = len([l for l in output.split("\n") if l.strip()]) if output else 0
    return {"name": "Grep", "input": {"pattern": pattern, "path": path, "output_mode": mode, "-n": True},
            "output": output if output else "No matches found",
            "result": {"mode": mode, "numFiles": 0, "filenames": [], "content": output, "numLines": n}}


def glob(pattern, files):
    return {"name": "Glob", "input": {"pattern": pattern},
            "output": "\n".join(files) if files else "No files found",
            "result": {"filenames": files, "durationMs": 12, "numFiles": len(files), "truncated": False}}


def tool_error(tool, message):
    """Turn a tool spec into a failed call."""
    t = dict(tool)
    t["output"] = message
    t["result"] = "Error: " + message
    t["is_error"] = True
    return t


SESSIONS = []


def session(**kw):
    SESSIONS.append(kw)


# ==========================================================================
# session-01  embedded C firmware (STM32, pressure sensor) - en
# ==========================================================================
S01_LINK = '''/* sensor_link.c - framing for the MS5837 pressure daughterboard */
#include <stdint.h>
#include <string.h>
#include "sensor_link.h"
#include "crc8.h"

#define FRAME_LEN 10u

/* RULE: never block inside sensor_link_poll() */
static uint8_t rx_buf[64];
static volatile uint16_t rx_head;

int sensor_link_poll(sensor_frame_t *out)
{
    if (rx_head < FRAME_LEN) {
        return 0;
    }
    out->pressure_pa = ((uint32_t)rx_buf[0] << 24) | ((uint32_t)rx_buf[1] << 16) |
                       ((uint32_t)rx_buf[2] << 8)  |  (uint32_t)rx_buf[3];
    out->temp_cdeg   = (int16_t)((rx_buf[4] << 8) | rx_buf[5]);
    out->seq         = (uint16_t)((rx_buf[6] << 8) | rx_buf[7]);
    rx_head = 0;
    return 1;
}'''

session(
    id="session-01", language="en", project="Embedded C firmware for an STM32 tide-gauge board",
    cwd="/home/mira/src/tidewatch-fw", branch="feature/pressure-frames", version="2.0.30",
    start="2025-10-14T08:12:41",
    turns=[
        U("The pressure readings coming off the MS5837 board are garbage at the parser, values jump around by millions. "
          "Can you look at src/sensor_link.c? Heads up, the sensor sends little-endian frames, 12 bytes each, with a CRC-8 in the last byte."),
        T("Let me read the parser first.", read("/home/mira/src/tidewatch-fw/src/sensor_link.c", S01_LINK, total=24)),
        T("The parser assumes big-endian and a 10-byte frame. Let me check whether there's a byte-swap helper already in the tree.",
          grep("bswap|le32|le16", "/home/mira/src/tidewatch-fw", "src/util/endian.h:4:static inline uint32_t rd_le32(const uint8_t *p)\nsrc/util/endian.h:9:static inline uint16_t rd_le16(const uint8_t *p)")),
        A('''Found the problem. `sensor_link_poll()` assembles `pressure_pa` MSB-first and uses `FRAME_LEN 10u`, so every field is byte-swapped and the CRC byte is never checked. There are already `rd_le32`/`rd_le16` helpers in `src/util/endian.h`, so the fix is small:

```c
#define FRAME_LEN 12u

int sensor_link_poll(sensor_frame_t *out)
{
    if (rx_head < FRAME_LEN) {
        return 0;
    }
    if (crc8_update(0x00, rx_buf, FRAME_LEN - 1u) != rx_buf[FRAME_LEN - 1u]) {
        rx_head = 0;
        return -1;              /* drop frame, caller counts CRC errors */
    }
    out->pressure_pa = rd_le32(&rx_buf[0]);
    out->temp_cdeg   = (int16_t)rd_le16(&rx_buf[4]);
    out->seq         = rd_le16(&rx_buf[6]);
    rx_head = 0;
    return 1;
}
```

Bytes 8..10 are reserved in the datasheet layout, so I'd leave them unparsed for now. It's generally a good idea to enable the independent watchdog early in main() on boards like this, since a stuck UART can otherwise hang the loop silently.

Shall I apply this?'''),
        U("Yes apply it. Also, what if we bumped the UART to 921600 baud? Would that help with the overruns we saw last week?"),
        A('''Probably not. At 115200 baud a 12-byte frame takes about 1 ms, and the sensor only emits at 50 Hz, so bandwidth isn't the bottleneck. The overruns come from `main()` polling `sensor_link_poll()` between the display refresh and the SD-card flush; when the SD write stalls for 30-40 ms, the 64-byte RX buffer wraps.

Proposal: move frame parsing into the DMA half-transfer callback and drop the polling loop in main(). The DMA ring is already set up in circular mode for USART2, so `HAL_UART_RxHalfCpltCallback` / `HAL_UART_RxCpltCallback` would each hand one half of the ring to the parser. No extra buffers needed, it stays within the existing static RX ring.'''),
        U("yeah do that. We don't malloc anywhere in this codebase, everything lives in static buffers, keep it that way."),
        T("Applying the endianness/CRC fix first.", edit("/home/mira/src/tidewatch-fw/src/sensor_link.c",
          "#define FRAME_LEN 10u", "#define FRAME_LEN 12u",
          "     7\u2192#define FRAME_LEN 12u\n     8\u2192\n     9\u2192/* RULE: never block inside sensor_link_poll() */")),
        T("Now the parser body and the DMA callbacks.", edit("/home/mira/src/tidewatch-fw/src/sensor_link.c",
          "    out->pressure_pa = ((uint32_t)rx_buf[0] << 24)",
          "    out->pressure_pa = rd_le32(&rx_buf[0]);")),
        T(None, edit("/home/mira/src/tidewatch-fw/src/main.c",
          "    while (1) {\n        sensor_frame_t f;\n        if (sensor_link_poll(&f) > 0) {\n            tide_push(&f);\n        }\n        display_refresh();\n        sd_flush();\n    }",
          "    while (1) {\n        display_refresh();\n        sd_flush();\n        __WFI();\n    }")),
        T("Building for the target.", bash("make -j8 TARGET=tidewatch_v2", "Build firmware",
          "arm-none-eabi-gcc -c -mcpu=cortex-m4 -mthumb -O2 -Wall -Werror -Iinclude src/sensor_link.c -o build/sensor_link.o",
          "src/sensor_link.c: In function 'sensor_link_parse_half':\nsrc/sensor_link.c:31:9: error: implicit declaration of function 'crc8_update' [-Werror=implicit-function-declaration]\n   31 |     if (crc8_update(0x00, buf, FRAME_LEN - 1u) != buf[FRAME_LEN - 1u]) {\n      |         ^~~~~~~~~~~\ncc1: all warnings being treated as errors\nmake: *** [Makefile:88: build/sensor_link.o] Error 1", error=True)),
        T("`crc8.h` only declares `crc8_table`; the function prototype is missing.", edit("/home/mira/src/tidewatch-fw/include/crc8.h",
          "extern const uint8_t crc8_table[256];",
          "extern const uint8_t crc8_table[256];\nuint8_t crc8_update(uint8_t crc, const uint8_t *data, uint32_t len);")),
        T(None, bash("make -j8 TARGET=tidewatch_v2 && make test-host", "Build firmware and run host unit tests",
          "arm-none-eabi-size build/tidewatch_v2.elf\n   text\t   data\t    bss\t    dec\t    hex\tfilename\n  41236\t    412\t   6120\t  47768\t   ba98\tbuild/tidewatch_v2.elf\ncc -std=c11 -Iinclude -Itests tests/test_sensor_link.c src/sensor_link.c src/crc8.c -o build/test_sensor_link\n./build/test_sensor_link\n[ RUN  ] frame_le_decode\n[  OK  ] frame_le_decode\n[ RUN  ] frame_bad_crc_dropped\n[  OK  ] frame_bad_crc_dropped\n[ RUN  ] half_transfer_split_frame\n[  OK  ] half_transfer_split_frame\n3 tests, 0 failures")),
        A('''Build is green and the host tests pass:

- `sensor_link.c`: 12-byte frames decoded with `rd_le32`/`rd_le16`, CRC-8 checked on the last byte, bad frames dropped with `-1`.
- `main.c`: polling loop removed, the loop now just refreshes the display, flushes SD and sleeps with `__WFI()`.
- DMA half/full callbacks hand each half of the existing static ring to `sensor_link_parse_half()`.
- `crc8.h`: added the missing `crc8_update` prototype.

bss grew by 0 bytes, nothing allocated at runtime.'''),
        U("Nice. Dave thinks we should switch to the LL drivers instead of HAL, but that's not happening this sprint. Commit it."),
        T(None, bash('git add -A && git commit -m "sensor_link: decode LE 12-byte frames with CRC-8, parse from DMA callbacks"',
          "Commit the changes",
          "[feature/pressure-frames 7c41e2a] sensor_link: decode LE 12-byte frames with CRC-8, parse from DMA callbacks\n 4 files changed, 58 insertions(+), 31 deletions(-)")),
        A("Committed as `7c41e2a` on `feature/pressure-frames`."),
    ],
    memories=[
        {"type": "fact", "text": "The MS5837 pressure sensor sends little-endian 12-byte frames with a CRC-8 in the last byte.",
         "keywords": ["little-endian", "CRC-8"]},
        {"type": "decision", "text": "Frame parsing moves into the DMA half-transfer callback and the polling loop in main() is dropped (assistant's proposal, accepted by the user with 'yeah do that'; keywords are in the proposal sentence).",
         "keywords": ["half-transfer", "polling loop"]},
        {"type": "antipattern", "text": "Never malloc in the firmware; everything lives in static buffers.",
         "keywords": ["malloc", "static buffers"]},
    ],
    not_memories=[
        "what if we bumped the UART to 921600 baud?",
        "RULE: never block inside sensor_link_poll()",
        "It's generally a good idea to enable the independent watchdog early in main()",
        "error: implicit declaration of function 'crc8_update'",
        "Dave thinks we should switch to the LL drivers instead of HAL",
    ],
)

# ==========================================================================
# session-02  dbt on Snowflake - en  (contains a reversed decision)
# ==========================================================================
S02_FCT = '''{{ config(materialized='table') }}

with orders as (
    select * from {{ ref('stg_shopify__orders') }}
),

refunds as (
    select * from {{ ref('stg_shopify__refunds') }}
)

select
    orders.*,
    coalesce(sum(refunds.amount), 0) as refunded_amount
from orders
left join refunds on refunds.order_id = orders.order_id
group by all'''

session(
    id="session-02", language="en", project="dbt project on Snowflake (e-commerce analytics)",
    cwd="/Users/kofi/work/analytics-dbt", branch="kofi/orders-incremental", version="2.0.28",
    start="2025-09-30T13:40:02",
    turns=[
        U("fct_orders takes 14 minutes every run now. Look at models/marts/core/fct_orders.sql and tell me what you'd do."),
        T(None, read("/Users/kofi/work/analytics-dbt/models/marts/core/fct_orders.sql", S02_FCT)),
        T("Let me check the model timings from the last run.", bash("jq -r '.results[] | select(.unique_id|test(\"fct_orders|stg_shopify\")) | \"\\(.unique_id) \\(.execution_time)\"' target/run_results.json",
          "Show execution times from last dbt run",
          "model.analytics.stg_shopify__orders 3.41\nmodel.analytics.stg_shopify__refunds 1.12\nmodel.analytics.fct_orders 842.77")),
        A('''`fct_orders` is a full `table` rebuild over ~180M orders every run, joined against all refunds, and it `select *`s the whole staging model. Two things stand out:

1. Make it incremental with `incremental_strategy='merge'` on `order_id`, only reprocessing orders updated in the last 3 days.
2. Replace `orders.*` with an explicit column list; we're carrying 40+ JSON columns into the mart that nothing downstream reads.

The dbt docs put it this way: "Incremental models should always define a unique_key if rows can be updated." That applies here because refunds update existing orders.'''),
        U("ok let's make fct_orders incremental with a merge strategy. and no select star in anything under marts/, list the columns explicitly."),
        T(None, edit("/Users/kofi/work/analytics-dbt/models/marts/core/fct_orders.sql",
          "{{ config(materialized='table') }}",
          "{{ config(\n    materialized='incremental',\n    incremental_strategy='merge',\n    unique_key='order_id',\n    on_schema_change='append_new_columns'\n) }}")),
        T("Adding the incremental filter and the explicit column list.", edit("/Users/kofi/work/analytics-dbt/models/marts/core/fct_orders.sql",
          "select\n    orders.*,",
          "select\n    orders.order_id,\n    orders.customer_id,\n    orders.ordered_at,\n    orders.updated_at,\n    orders.currency,\n    orders.gross_amount,\n    orders.discount_amount,")),
        T(None, bash("dbt build -s fct_orders+ --target dev", "Build fct_orders and children in dev",
          "13:52:10  Running with dbt=1.8.7\n13:52:12  Found 214 models, 388 data tests, 31 sources, 0 exposures, 1121 macros\n13:52:13  Concurrency: 8 threads (target='dev')\n13:52:14  1 of 4 START sql incremental model dbt_kofi.fct_orders ................ [RUN]\n13:52:58  1 of 4 OK created sql incremental model dbt_kofi.fct_orders ........... [SUCCESS 1 in 44.02s]\n13:53:01  2 of 4 START test unique_fct_orders_order_id .......................... [RUN]\n13:53:04  2 of 4 PASS unique_fct_orders_order_id ................................ [PASS in 3.10s]\n13:53:04  3 of 4 START test assert_refunds_match_finance ........................ [RUN]\n13:53:09  3 of 4 FAIL 212 assert_refunds_match_finance .......................... [FAIL 212 in 4.88s]\n13:53:09  4 of 4 SKIP relation dbt_kofi.fct_customer_ltv ....................... [SKIP]\n13:53:09  Done. PASS=2 WARN=0 ERROR=0 SKIP=1 TOTAL=4\n13:53:09  Failure in test assert_refunds_match_finance (tests/assert_refunds_match_finance.sql)", error=True)),
        A('''Runtime dropped from 842s to 44s, but `assert_refunds_match_finance` now fails on 212 orders. Those are orders whose refund arrived more than 3 days after the order's own `updated_at`: Shopify doesn't touch the order row when a late refund is issued, so the 3-day lookback misses them.

Options:
- widen the lookback to 60 days (slower, still not airtight),
- drive the incremental filter off `max(refunds.created_at)` as well, which needs a second merge key path,
- or keep the table materialization and just trim the columns, which already cuts a lot of the scan.'''),
        U("should we move to dbt Cloud at some point so this is someone else's problem? no, forget it. Actually scrap the incremental thing, fct_orders stays a full table rebuild, the late refunds make merge too fiddly. Keep the column trimming."),
        T(None, edit("/Users/kofi/work/analytics-dbt/models/marts/core/fct_orders.sql",
          "{{ config(\n    materialized='incremental',\n    incremental_strategy='merge',\n    unique_key='order_id',\n    on_schema_change='append_new_columns'\n) }}",
          "{{ config(materialized='table') }}")),
        T(None, bash("dbt build -s fct_orders+ --target dev", "Rebuild fct_orders as table",
          "13:58:40  Running with dbt=1.8.7\n13:58:43  1 of 4 START sql table model dbt_kofi.fct_orders ...................... [RUN]\n13:59:58  1 of 4 OK created sql table model dbt_kofi.fct_orders ................. [SUCCESS 1 in 75.31s]\n13:59:58  2 of 4 PASS unique_fct_orders_order_id ................................ [PASS in 2.96s]\n14:00:03  3 of 4 PASS assert_refunds_match_finance .............................. [PASS in 4.41s]\n14:00:20  4 of 4 OK created sql table model dbt_kofi.fct_customer_ltv ........... [SUCCESS 1 in 16.80s]\n14:00:20  Done. PASS=4 WARN=0 ERROR=0 SKIP=0 TOTAL=4")),
        A("Back to a table materialization with the trimmed column list: 75s instead of 842s, and the finance reconciliation test passes again. Want me to also look at the source freshness config while we're here? `sources.yml` has `warn_after: 12h` for shopify."),
        U("fyi the shopify raw tables land via Fivetran every 6 hours, so warn at 12h is right, leave it. Priya wants everything in snapshots but that's a separate conversation. Also I'm adding stg_shopify__fulfillments next week: staging models are always stg_<source>__<table>, double underscore, like the rest of the repo."),
        T("Noted. Let me confirm nothing in staging breaks that pattern before you add the new one.", glob("models/staging/**/*.sql", [
          "models/staging/shopify/stg_shopify__orders.sql", "models/staging/shopify/stg_shopify__refunds.sql",
          "models/staging/shopify/stg_shopify__customers.sql", "models/staging/stripe/stg_stripe__charges.sql",
          "models/staging/stripe/stg_stripe__payouts.sql", "models/staging/hubspot/stg_hubspot__contacts.sql"])),
        A("All six staging models already follow `stg_<source>__<table>`. I left freshness at `warn_after: 12h`. Changes on the branch: `fct_orders.sql` keeps `materialized='table'` with an explicit column list."),
        U("good, commit it"),
        T(None, bash('git commit -am "fct_orders: explicit columns instead of select *"', "Commit",
          "[kofi/orders-incremental 2e9f0d1] fct_orders: explicit columns instead of select *\n 1 file changed, 14 insertions(+), 2 deletions(-)")),
        A("Committed `2e9f0d1`."),
    ],
    memories=[
        {"type": "decision", "text": "fct_orders stays a full table rebuild instead of an incremental merge model, because late-arriving refunds make merge too fiddly (this reverses the earlier choice to make it incremental).",
         "keywords": ["full table rebuild", "fct_orders"]},
        {"type": "antipattern", "text": "No select star in any model under marts/; list the columns explicitly.",
         "keywords": ["select star", "marts"]},
        {"type": "fact", "text": "The Shopify raw tables land via Fivetran every 6 hours.",
         "keywords": ["Fivetran", "6 hours"]},
        {"type": "convention", "text": "Staging models are named stg_<source>__<table> with a double underscore.",
         "keywords": ["staging models", "double underscore"]},
    ],
    not_memories=[
        "ok let's make fct_orders incremental with a merge strategy",
        "Incremental models should always define a unique_key if rows can be updated.",
        "should we move to dbt Cloud at some point so this is someone else's problem?",
        "widen the lookback to 60 days",
        "Priya wants everything in snapshots",
    ],
)

# ==========================================================================
# session-03  Unity 2D platformer (C#) - en
# ==========================================================================
S03_PLAYER = '''using UnityEngine;

public class PlayerController : MonoBehaviour
{
    const float MoveSpeed = 7.5f;
    const float JumpVelocity = 13f;
    const float CoyoteTime = 0.1f;
    const float DashSpeed = 22f;

    Rigidbody2D body;
    float lastGroundedAt;

    void Awake()
    {
        body = GetComponent<Rigidbody2D>();
    }

    void Update()
    {
        var lantern = FindObjectOfType<LanternController>();
        float x = Input.GetAxisRaw("Horizontal");
        body.velocity = new Vector2(x * MoveSpeed, body.velocity.y);

        if (Input.GetButtonDown("Jump") && Time.time - lastGroundedAt <= CoyoteTime)
            body.velocity = new Vector2(body.velocity.x, JumpVelocity);

        if (Input.GetButtonDown("Fire3"))
            lantern.Flare();
    }
}'''

session(
    id="session-03", language="en", project="Unity 2D platformer 'Lanternfall' (C#)",
    cwd="/home/jules/Projects/Lanternfall", branch="dev", version="2.0.31",
    start="2025-10-20T21:05:17",
    turns=[
        U("Gamepad support next. Players keep asking for it on the itch page. Start with Assets/Scripts/Player/PlayerController.cs"),
        T(None, read("/home/jules/Projects/Lanternfall/Assets/Scripts/Player/PlayerController.cs", S03_PLAYER)),
        T("Let me see how many scripts read input directly.", grep(r"Input\.Get(Axis|Button|Key)", "/home/jules/Projects/Lanternfall/Assets/Scripts",
          "Assets/Scripts/Player/PlayerController.cs:21:        float x = Input.GetAxisRaw(\"Horizontal\");\nAssets/Scripts/Player/PlayerController.cs:24:        if (Input.GetButtonDown(\"Jump\") && Time.time - lastGroundedAt <= CoyoteTime)\nAssets/Scripts/Player/PlayerController.cs:27:        if (Input.GetButtonDown(\"Fire3\"))\nAssets/Scripts/UI/PauseMenu.cs:18:        if (Input.GetKeyDown(KeyCode.Escape))\nAssets/Scripts/World/LadderZone.cs:33:        float y = Input.GetAxis(\"Vertical\");")),
        A('''Five call sites across three scripts read input directly. Two ways to add gamepad support:

**Option A:** migrate to the new Input System package. One `PlayerControls.inputactions` asset with keyboard and gamepad bindings, generated C# wrapper, rebinding UI basically for free.

**Option B:** stay on the legacy Input Manager with Input.GetAxis and add joystick axes in ProjectSettings/InputManager.asset. Less churn today, but no rebinding and per-controller axis mapping is painful.

Separately: `Update()` calls `FindObjectOfType<LanternController>()` every frame, which walks the whole scene. That's a measurable cost on the Steam Deck build.'''),
        U("ok, the new Input System it is, rip out the old GetAxis calls everywhere. And no FindObjectOfType in Update, ever, cache it in Awake."),
        T(None, bash("grep -n '\"com.unity.inputsystem\"' Packages/manifest.json || echo 'not installed'", "Check whether the Input System package is installed",
          "not installed")),
        T("Adding the package and switching the active input handling.", edit("/home/jules/Projects/Lanternfall/Packages/manifest.json",
          '    "com.unity.ide.rider": "3.0.28",', '    "com.unity.ide.rider": "3.0.28",\n    "com.unity.inputsystem": "1.11.2",')),
        T(None, write("/home/jules/Projects/Lanternfall/Assets/Input/PlayerControls.inputactions",
          '{\n    "name": "PlayerControls",\n    "maps": [\n        {\n            "name": "Gameplay",\n            "actions": [\n                { "name": "Move", "type": "Value", "expectedControlType": "Vector2" },\n                { "name": "Jump", "type": "Button" },\n                { "name": "Flare", "type": "Button" }\n            ],\n            "bindings": [\n                { "path": "<Gamepad>/leftStick", "action": "Move" },\n                { "path": "<Keyboard>/a", "action": "Move", "isPartOfComposite": true },\n                { "path": "<Gamepad>/buttonSouth", "action": "Jump" },\n                { "path": "<Keyboard>/space", "action": "Jump" },\n                { "path": "<Gamepad>/buttonWest", "action": "Flare" },\n                { "path": "<Keyboard>/leftShift", "action": "Flare" }\n            ]\n        }\n    ]\n}')),
        T("Now the controller itself.", edit("/home/jules/Projects/Lanternfall/Assets/Scripts/Player/PlayerController.cs",
          "    void Awake()\n    {\n        body = GetComponent<Rigidbody2D>();\n    }",
          "    LanternController lantern;\n    PlayerControls controls;\n\n    void Awake()\n    {\n        body = GetComponent<Rigidbody2D>();\n        lantern = FindObjectOfType<LanternController>();\n        controls = new PlayerControls();\n        controls.Gameplay.Jump.performed += _ => TryJump();\n        controls.Gameplay.Flare.performed += _ => lantern.Flare();\n    }\n\n    void OnEnable() => controls.Enable();\n    void OnDisable() => controls.Disable();")),
        T("Running the edit-mode tests through the Unity CLI.", bash("/opt/unity/2022.3.45f1/Editor/Unity -batchmode -projectPath . -runTests -testPlatform EditMode -testResults /tmp/lf-tests.xml -logFile - | tail -n 12",
          "Run EditMode tests",
          "NullReferenceException: Object reference not set to an instance of an object\n  at PlayerController.Awake () [0x0002c] in Assets/Scripts/Player/PlayerController.cs:22\n  at PlayerMovementTests.Jump_WithinCoyoteWindow_Jumps () [0x00011] in Assets/Tests/EditMode/PlayerMovementTests.cs:41\nTest run finished: 14 passed, 1 failed, 0 skipped\nExiting batchmode with return code 2", error=True)),
        A('''One failure: the test scene has no `LanternController`, so `lantern` is null in `Awake()` and the `Flare` subscription throws. I'll guard the subscription and add a lantern stub to the test fixture rather than reintroducing a per-frame lookup:

```csharp
if (lantern != null)
    controls.Gameplay.Flare.performed += _ => lantern.Flare();
```'''),
        T(None, edit("/home/jules/Projects/Lanternfall/Assets/Scripts/Player/PlayerController.cs",
          "        controls.Gameplay.Flare.performed += _ => lantern.Flare();",
          "        if (lantern != null)\n            controls.Gameplay.Flare.performed += _ => lantern.Flare();")),
        T(None, bash("/opt/unity/2022.3.45f1/Editor/Unity -batchmode -projectPath . -runTests -testPlatform EditMode -testResults /tmp/lf-tests.xml -logFile - | tail -n 2",
          "Re-run EditMode tests", "Test run finished: 15 passed, 0 failed, 0 skipped\nExiting batchmode with return code 0")),
        A("All 15 edit-mode tests pass. `PauseMenu.cs` and `LadderZone.cs` still need porting; I can do them next. While I'm in here, should `MoveSpeed`, `JumpVelocity`, `CoyoteTime` and `DashSpeed` stay as consts?"),
        U("Sam from QA says coyote time should be 0.2s, I don't buy it, leave the value. But I'd rather have all the tuning numbers in ScriptableObjects, not consts in the scripts, so designers can tweak them without recompiling. Do the other two scripts first though."),
        T(None, edit("/home/jules/Projects/Lanternfall/Assets/Scripts/World/LadderZone.cs",
          '        float y = Input.GetAxis("Vertical");', "        float y = controls.Gameplay.Move.ReadValue<Vector2>().y;")),
        T(None, edit("/home/jules/Projects/Lanternfall/Assets/Scripts/UI/PauseMenu.cs",
          "        if (Input.GetKeyDown(KeyCode.Escape))", "        if (controls.UI.Pause.WasPressedThisFrame())")),
        A("Ported `LadderZone` and `PauseMenu` (added a `UI/Pause` action bound to Escape and the gamepad Start button). Next up I'll create a `PlayerTuning` ScriptableObject with the four movement values and wire it into `PlayerController`."),
    ],
    memories=[
        {"type": "decision", "text": "Input moves to Unity's new Input System; the old Input.GetAxis calls get removed everywhere.",
         "keywords": ["Input System", "GetAxis"]},
        {"type": "antipattern", "text": "Never call FindObjectOfType in Update; cache the reference in Awake.",
         "keywords": ["FindObjectOfType", "Awake"]},
        {"type": "preference", "text": "Gameplay tuning numbers should live in ScriptableObjects rather than consts in scripts, so designers can tweak them without recompiling.",
         "keywords": ["ScriptableObjects", "tuning"]},
    ],
    not_memories=[
        "stay on the legacy Input Manager with Input.GetAxis",
        "NullReferenceException: Object reference not set to an instance of an object",
        "Sam from QA says coyote time should be 0.2s",
        "should `MoveSpeed`, `JumpVelocity`, `CoyoteTime` and `DashSpeed` stay as consts?",
    ],
)

# ==========================================================================
# session-04  Elixir / Phoenix ledger service - en
# ==========================================================================
S04_CTX = '''defmodule Ledgerd.Payouts do
  @moduledoc false
  import Ecto.Query
  alias Ledgerd.Repo
  alias Ledgerd.Payouts.Payout

  def create_payout!(attrs) do
    %Payout{}
    |> Payout.changeset(attrs)
    |> Repo.insert!()
  end

  def send_to_bank(%Payout{} = payout) do
    case BankClient.transfer(payout.iban, payout.amount_cents, payout.reference) do
      {:ok, ref} -> mark_sent(payout, ref)
      {:error, :timeout} -> send_to_bank(payout)
      {:error, reason} -> raise "bank transfer failed: #{inspect(reason)}"
    end
  end
end'''

session(
    id="session-04", language="en", project="Elixir/Phoenix payments ledger service",
    cwd="/srv/dev/ledgerd", branch="payouts-retry", version="2.0.30",
    start="2025-11-03T10:02:55",
    turns=[
        U("Payouts are blowing up in prod when the bank API times out; it recurses until the process dies. lib/ledgerd/payouts.ex"),
        T(None, read("/srv/dev/ledgerd/lib/ledgerd/payouts.ex", S04_CTX)),
        A('''Two problems in `send_to_bank/1`:

1. `{:error, :timeout} -> send_to_bank(payout)` retries immediately and forever, with no backoff, so a bank outage turns into a tight loop inside the request process.
2. Any other error `raise`s, which crashes the caller (a LiveView in the admin UI).

For retrying I see two realistic options:

- **Oban**: enqueue a `Ledgerd.Workers.SendPayout` job with `max_attempts: 8` and exponential backoff. Persistent, survives deploys, visible in Oban Web.
- **A GenServer with Process.send_after**: a small in-memory retry queue. No new dependency, but retries are lost on restart.

Also, `create_payout!/1` is a bang function in a context module.'''),
        U("fine, Oban then, no homegrown retry loop. And contexts return tagged tuples, they don't raise, so lose the bang and the raise. Should we be using Ecto.Multi for the mark_sent part too?"),
        A('''Yes, I think so: `mark_sent/2` updates the payout row and inserts a `ledger_entries` row, and those should commit together. I'll wrap them in an `Ecto.Multi`.

Plan:
1. Add `{:oban, "~> 2.18"}` and an `oban_jobs` migration.
2. `Ledgerd.Workers.SendPayout` with `max_attempts: 8`, backoff handled by Oban's default exponential schedule.
3. `Payouts.create_payout/1` returns `{:ok, payout}` / `{:error, changeset}`; `send_to_bank/1` returns `{:ok, payout}` / `{:error, reason}`.'''),
        T(None, edit("/srv/dev/ledgerd/mix.exs", '      {:phoenix_ecto, "~> 4.6"},', '      {:phoenix_ecto, "~> 4.6"},\n      {:oban, "~> 2.18"},')),
        T(None, bash("mix deps.get && mix ecto.gen.migration add_oban_jobs_table", "Fetch deps and create Oban migration",
          "Resolving Hex dependencies...\nResolution completed in 0.211s\nNew:\n  oban 2.18.3\n* Getting oban (Hex package)\n* creating priv/repo/migrations/20251103100912_add_oban_jobs_table.exs")),
        T(None, write("/srv/dev/ledgerd/lib/ledgerd/workers/send_payout.ex",
          '''defmodule Ledgerd.Workers.SendPayout do
  use Oban.Worker, queue: :payouts, max_attempts: 8

  alias Ledgerd.Payouts

  @impl Oban.Worker
  def perform(%Oban.Job{args: %{"payout_id" => id}}) do
    payout = Payouts.get_payout(id)

    case Payouts.send_to_bank(payout) do
      {:ok, _payout} -> :ok
      {:error, :timeout} -> {:error, :timeout}
      {:error, reason} -> {:cancel, reason}
    end
  end
end''')),
        T(None, edit("/srv/dev/ledgerd/lib/ledgerd/payouts.ex",
          "  def create_payout!(attrs) do\n    %Payout{}\n    |> Payout.changeset(attrs)\n    |> Repo.insert!()\n  end",
          "  def create_payout(attrs) do\n    %Payout{}\n    |> Payout.changeset(attrs)\n    |> Repo.insert()\n  end")),
        T(None, bash("mix test test/ledgerd/payouts_test.exs", "Run payout tests",
          "Compiling 4 files (.ex)\n..\n\n  1) test send_to_bank/1 stores amount (Ledgerd.PayoutsTest)\n     test/ledgerd/payouts_test.exs:58\n     Assertion with == failed\n     code:  assert entry.amount == 1999\n     left:  19.99\n     right: 1999\n     stacktrace:\n       test/ledgerd/payouts_test.exs:64: (test)\n\nFinished in 0.4 seconds (0.00s async, 0.4s sync)\n7 tests, 1 failure", error=True)),
        A("The failing test expects `1999` but `mark_sent` writes `payout.amount_cents / 100` into `ledger_entries.amount`. Was that division intentional? The column is `:integer` in the migration but the value is a float."),
        U("no, that's a bug. All amounts are stored as integer cents in Postgres, always have been. Fix it."),
        T(None, edit("/srv/dev/ledgerd/lib/ledgerd/payouts.ex",
          "      amount: payout.amount_cents / 100,", "      amount: payout.amount_cents,")),
        T(None, bash("mix test && mix credo --strict lib/ledgerd/workers", "Run full test suite and credo",
          "Finished in 2.1 seconds (0.9s async, 1.2s sync)\n143 tests, 0 failures\n\nChecking 1 source file ...\n\n  Code Readability\n\u2503\n\u2503 [R] \u2192 Modules should have a @moduledoc tag.\n\u2503       lib/ledgerd/workers/send_payout.ex:1:11 #(Ledgerd.Workers.SendPayout)\n\n1 mods/funs, found 1 code readability issue.")),
        A('''All 143 tests pass. Summary:

- Oban added, `SendPayout` worker with `max_attempts: 8`; timeouts return `{:error, :timeout}` so Oban retries with backoff, other errors `{:cancel, reason}`.
- `create_payout/1` and `send_to_bank/1` return tagged tuples, no raises.
- `mark_sent/2` runs in an `Ecto.Multi` and writes `amount_cents` unchanged.

Credo flags a missing `@moduledoc` on the worker. You may want to consider adding Dialyzer to CI as well; it would have caught the float going into an integer field.'''),
        U("leave credo, push the branch"),
        T(None, bash("git push -u origin payouts-retry", "Push branch",
          "To github.com:acme-fin/ledgerd.git\n * [new branch]      payouts-retry -> payouts-retry\nbranch 'payouts-retry' set up to track 'origin/payouts-retry'.")),
    ],
    memories=[
        {"type": "decision", "text": "Payout retries go through Oban rather than a homegrown retry loop or GenServer.",
         "keywords": ["Oban", "retry loop"]},
        {"type": "convention", "text": "Context modules return tagged tuples and never raise; no bang functions in contexts.",
         "keywords": ["tagged tuples", "raise"]},
        {"type": "fact", "text": "All amounts are stored as integer cents in Postgres.",
         "keywords": ["integer cents", "Postgres"]},
    ],
    not_memories=[
        "Should we be using Ecto.Multi for the mark_sent part too?",
        "A GenServer with Process.send_after",
        "Modules should have a @moduledoc tag.",
        "You may want to consider adding Dialyzer to CI as well",
        "Was that division intentional?",
    ],
)

# ==========================================================================
# session-05  Kotlin Android household-budget app - ja
# ==========================================================================
S05_VM = '''package jp.haruka.kakeibo.ui.expenses

import androidx.lifecycle.LiveData
import androidx.lifecycle.MutableLiveData
import androidx.lifecycle.ViewModel
import jp.haruka.kakeibo.data.ExpenseDao
import jp.haruka.kakeibo.data.ExpenseEntity
import kotlinx.coroutines.GlobalScope
import kotlinx.coroutines.launch

class ExpenseListViewModel(private val dao: ExpenseDao) : ViewModel() {

    private val _expenses = MutableLiveData<List<ExpenseEntity>>()
    val expenses: LiveData<List<ExpenseEntity>> = _expenses

    fun load(month: String) {
        GlobalScope.launch {
            _expenses.postValue(dao.findByMonth(month))
        }
    }
}'''

session(
    id="session-05", language="ja", project="Kotlin Android 家計簿アプリ",
    cwd="/Users/haruka/AndroidStudioProjects/Kakeibo", branch="feature/category-filter", version="2.0.27",
    start="2025-09-18T19:31:08",
    turns=[
        U("支出一覧にカテゴリで絞り込むフィルターを付けたいです。まず ExpenseListViewModel.kt を見てもらえますか。"),
        T(None, read("/Users/haruka/AndroidStudioProjects/Kakeibo/app/src/main/java/jp/haruka/kakeibo/ui/expenses/ExpenseListViewModel.kt", S05_VM)),
        T("画面側のレイアウトも確認します。", glob("app/src/main/res/layout/*.xml", [
          "app/src/main/res/layout/activity_main.xml", "app/src/main/res/layout/fragment_expense_list.xml",
          "app/src/main/res/layout/item_expense.xml", "app/src/main/res/layout/fragment_settings.xml"])),
        A('''現状を整理します。

- `ExpenseListViewModel.load()` は `GlobalScope.launch` で Room から読み込んでいます。画面を閉じてもコルーチンが生き続けるので、回転のたびにクエリが重複します。
- 一覧は `fragment_expense_list.xml` の `RecyclerView` です。

フィルター UI の作り方は2通り考えられます。

1. 既存の `fragment_expense_list.xml` に `ChipGroup` を追加する
2. フィルター部分だけ Compose で書いて `ComposeView` で埋め込む

```kotlin
@Composable
fun ExpenseFilterChips(categories: List<Category>, selected: Category?, onSelect: (Category?) -> Unit) {
    LazyRow(horizontalArrangement = Arrangement.spacedBy(8.dp)) {
        items(categories) { c ->
            FilterChip(selected = c == selected, onClick = { onSelect(c) }, label = { Text(c.label) })
        }
    }
}
```

また、将来 KMP を視野に入れるなら、Room の代わりに SQLDelight に移行する案もあります。'''),
        U("新しい画面は全部 Compose で書いて、XMLレイアウトはもう増やさない方針です。それと GlobalScope.launch は絶対に使わないで、viewModelScope にしてください。SQLDelight の話は今回はなしで。"),
        T("ViewModel から直します。", edit("/Users/haruka/AndroidStudioProjects/Kakeibo/app/src/main/java/jp/haruka/kakeibo/ui/expenses/ExpenseListViewModel.kt",
          "        GlobalScope.launch {\n            _expenses.postValue(dao.findByMonth(month))\n        }",
          "        viewModelScope.launch {\n            _expenses.value = dao.findByMonth(month, selectedCategory.value)\n        }")),
        T("フィルターの Composable を新規作成します。", write("/Users/haruka/AndroidStudioProjects/Kakeibo/app/src/main/java/jp/haruka/kakeibo/ui/expenses/ExpenseFilterChips.kt",
          "package jp.haruka.kakeibo.ui.expenses\n\nimport androidx.compose.foundation.layout.Arrangement\nimport androidx.compose.foundation.lazy.LazyRow\nimport androidx.compose.foundation.lazy.items\nimport androidx.compose.material3.FilterChip\nimport androidx.compose.material3.Text\nimport androidx.compose.runtime.Composable\nimport androidx.compose.ui.unit.dp\nimport jp.haruka.kakeibo.data.Category\n\n@Composable\nfun ExpenseFilterChips(categories: List<Category>, selected: Category?, onSelect: (Category?) -> Unit) {\n    LazyRow(horizontalArrangement = Arrangement.spacedBy(8.dp)) {\n        items(categories) { c ->\n            FilterChip(selected = c == selected, onClick = { onSelect(c) }, label = { Text(c.label) })\n        }\n    }\n}\n")),
        T(None, bash("./gradlew :app:lintDebug --console=plain | tail -n 8", "Run Android lint",
          "> Task :app:lintDebug\n/Users/haruka/AndroidStudioProjects/Kakeibo/app/src/main/java/jp/haruka/kakeibo/sync/SyncWorker.kt:42: Warning: This is a delicate API and its use requires care. Make sure you fully read and understand documentation of the declaration that is marked as a delicate API. [OptIn]\n        GlobalScope.launch(Dispatchers.IO) { uploadPending() }\n        ~~~~~~~~~~~\n0 errors, 1 warnings\n\nBUILD SUCCESSFUL in 38s\n27 actionable tasks: 3 executed, 24 up-to-date")),
        A("lint によると `SyncWorker.kt` にも `GlobalScope` が残っています。こちらも直しますか？ それと、Compose の依存を確認したところ `minSdk` が 26 でした。Compose 自体は 21 以上で動くので問題ありませんが、28 に上げると `BiometricPrompt` まわりの分岐が消せます。上げてもいいですか？"),
        U("SyncWorker も直してください。minSdk は 26 のままです、経理部の端末がまだ Android 8 なので。ところで Hilt に移行したほうがいいですかね？ 田中さんは KMP にしたいと言ってますが、それは当分先です。"),
        A('''了解です、minSdk はそのままにします。

Hilt については、今は ViewModel が3つで依存も `ExpenseDao` と `SyncApi` だけなので、手動の `ViewModelProvider.Factory` で十分回っています。画面が増えてきたら検討、くらいで良いと思います。

`SyncWorker` は `CoroutineWorker` に変えて、`doWork()` の中で直接 suspend 関数を呼ぶ形にします。'''),
        T(None, edit("/Users/haruka/AndroidStudioProjects/Kakeibo/app/src/main/java/jp/haruka/kakeibo/sync/SyncWorker.kt",
          "class SyncWorker(ctx: Context, params: WorkerParameters) : Worker(ctx, params) {\n    override fun doWork(): Result {\n        GlobalScope.launch(Dispatchers.IO) { uploadPending() }\n        return Result.success()\n    }",
          "class SyncWorker(ctx: Context, params: WorkerParameters) : CoroutineWorker(ctx, params) {\n    override suspend fun doWork(): Result {\n        uploadPending()\n        return Result.success()\n    }")),
        T(None, bash("./gradlew :app:testDebugUnitTest --console=plain | tail -n 6", "Run unit tests",
          "> Task :app:testDebugUnitTest\n\nExpenseListViewModelTest > load filters by category PASSED\nExpenseListViewModelTest > load without category returns all PASSED\nSyncWorkerTest > doWork uploads pending rows PASSED\n\nBUILD SUCCESSFUL in 52s")),
        A('''テストは全部通りました。変更点:

- `ExpenseListViewModel`: `viewModelScope` に変更、カテゴリ絞り込みを追加
- `ExpenseFilterChips.kt`: Compose の `FilterChip` 行を新規作成し、`ComposeView` で一覧の上に配置
- `SyncWorker`: `CoroutineWorker` に変更して `GlobalScope` を削除

リリース前に ProGuard（R8）の設定も見直すことをおすすめします。コミットは1つにまとめますか？'''),
        U("コミットは小さめに分けてもらえると助かります。ViewModel の修正、SyncWorker、フィルター UI で3つに。"),
        T(None, bash('git add app/src/main/java/jp/haruka/kakeibo/ui/expenses/ExpenseListViewModel.kt && git commit -m "ExpenseListViewModel: use viewModelScope, add category filter"',
          "Commit ViewModel change", "[feature/category-filter 3b8c0e4] ExpenseListViewModel: use viewModelScope, add category filter\n 1 file changed, 9 insertions(+), 5 deletions(-)")),
        T(None, bash('git add app/src/main/java/jp/haruka/kakeibo/sync/SyncWorker.kt && git commit -m "SyncWorker: switch to CoroutineWorker" && git add -A && git commit -m "Add ExpenseFilterChips composable"',
          "Commit SyncWorker and filter UI", "[feature/category-filter 91d2a7f] SyncWorker: switch to CoroutineWorker\n 1 file changed, 4 insertions(+), 5 deletions(-)\n[feature/category-filter c40f5b2] Add ExpenseFilterChips composable\n 2 files changed, 31 insertions(+), 2 deletions(-)")),
        A("3つのコミットに分けました（`3b8c0e4`, `91d2a7f`, `c40f5b2`）。"),
    ],
    memories=[
        {"type": "decision", "text": "新しい画面はすべて Jetpack Compose で書き、XML レイアウトはもう追加しない。",
         "keywords": ["Compose", "XMLレイアウト"]},
        {"type": "antipattern", "text": "GlobalScope.launch は使わず、viewModelScope を使う。",
         "keywords": ["GlobalScope", "viewModelScope"]},
        {"type": "fact", "text": "minSdk は 26 のまま（経理部の端末がまだ Android 8 のため）。",
         "keywords": ["minSdk", "経理部"]},
        {"type": "preference", "text": "コミットは小さめに分けてほしい。",
         "keywords": ["コミット", "小さめ"]},
    ],
    not_memories=[
        "Room の代わりに SQLDelight に移行する案もあります",
        "This is a delicate API and its use requires care.",
        "Hilt に移行したほうがいいですかね？",
        "田中さんは KMP にしたいと言ってますが",
        "リリース前に ProGuard（R8）の設定も見直すことをおすすめします。",
    ],
)

# ==========================================================================
# session-06  Terraform AWS account - en
# ==========================================================================
S06_MAIN = '''resource "aws_s3_bucket" "this" {
  bucket = var.name
}

resource "aws_s3_bucket_versioning" "this" {
  bucket = aws_s3_bucket.this.id
  versioning_configuration {
    status = var.versioning ? "Enabled" : "Suspended"
  }
}

resource "aws_s3_bucket_public_access_block" "this" {
  bucket                  = aws_s3_bucket.this.id
  block_public_acls       = true
  block_public_policy     = true
  ignore_public_acls      = true
  restrict_public_buckets = true
}'''

session(
    id="session-06", language="en", project="Terraform for an AWS workload account",
    cwd="/home/ops/infra-aws", branch="chore/s3-access-logging", version="2.0.30",
    start="2025-10-08T15:17:33",
    turns=[
        U("Security Hub keeps flagging the static-assets and exports buckets for missing access logging. The bucket module is modules/s3-bucket, can you sort it out?"),
        T(None, read("/home/ops/infra-aws/modules/s3-bucket/main.tf", S06_MAIN)),
        T(None, bash("checkov -d modules/s3-bucket --compact --quiet", "Run checkov on the bucket module",
          "terraform scan results:\n\nPassed checks: 6, Failed checks: 2, Skipped checks: 0\n\nCheck: CKV_AWS_18: \"Ensure the S3 bucket has access logging enabled\"\n\tFAILED for resource: aws_s3_bucket.this\n\tFile: /main.tf:1-3\nCheck: CKV_AWS_144: \"Ensure that S3 bucket has cross-region replication enabled\"\n\tFAILED for resource: aws_s3_bucket.this\n\tFile: /main.tf:1-3", error=True)),
        A('''The module has no `aws_s3_bucket_logging` at all, hence CKV_AWS_18. (CKV_AWS_144 about replication is a separate, noisier check; I'd ignore it for these two buckets.)

Two ways to wire the logs:

- **Option 1:** turn on logging straight into the same bucket under a `logs/` prefix. No extra resources, but AWS advises against it: every log delivery is itself a write that gets logged.
- **Option 2:** one dedicated log bucket in this account that both buckets deliver to.

I'd put the access logs in a separate log bucket with a 90-day lifecycle expiry rule, with `BucketOwnerEnforced` ownership and a bucket policy that only allows `logging.s3.amazonaws.com`.'''),
        U("sounds good, go with that. What if we moved the whole repo to OpenTofu while we're at it? nah, not now. Heads up, the aws provider has to stay on 4.x because the landing-zone module pins it, so don't bump anything."),
        T("Checking the provider constraints.", read("/home/ops/infra-aws/versions.tf",
          'terraform {\n  required_version = ">= 1.5.0"\n\n  required_providers {\n    aws = {\n      source  = "hashicorp/aws"\n      version = "~> 4.67"\n    }\n  }\n\n  backend "s3" {\n    bucket         = "acme-prod-tfstate-eu-west-1"\n    key            = "workload/terraform.tfstate"\n    region         = "eu-west-1"\n    dynamodb_table = "tfstate-locks"\n  }\n}')),
        T("Provider 4.67 supports the split `aws_s3_bucket_logging` and `aws_s3_bucket_lifecycle_configuration` resources, so no bump needed.",
          write("/home/ops/infra-aws/modules/s3-log-bucket/main.tf",
          'resource "aws_s3_bucket" "logs" {\n  bucket = var.name\n}\n\nresource "aws_s3_bucket_ownership_controls" "logs" {\n  bucket = aws_s3_bucket.logs.id\n  rule {\n    object_ownership = "BucketOwnerEnforced"\n  }\n}\n\nresource "aws_s3_bucket_lifecycle_configuration" "logs" {\n  bucket = aws_s3_bucket.logs.id\n  rule {\n    id     = "expire-access-logs"\n    status = "Enabled"\n    filter {}\n    expiration {\n      days = 90\n    }\n  }\n}\n')),
        T(None, edit("/home/ops/infra-aws/modules/s3-bucket/main.tf",
          'resource "aws_s3_bucket_public_access_block" "this" {',
          'resource "aws_s3_bucket_logging" "this" {\n  count         = var.log_bucket == null ? 0 : 1\n  bucket        = aws_s3_bucket.this.id\n  target_bucket = var.log_bucket\n  target_prefix = "${var.name}/"\n}\n\nresource "aws_s3_bucket_public_access_block" "this" {')),
        T(None, bash("terraform plan -no-color -out=tfplan | tail -n 22", "Plan the change",
          "Note: Objects have changed outside of Terraform\n\nTerraform detected the following changes made outside of Terraform since the\nlast \"terraform apply\" which may have affected this plan:\n\n  # aws_s3_bucket_versioning.tfstate has changed\n  ~ resource \"aws_s3_bucket_versioning\" \"tfstate\" {\n        id     = \"acme-prod-tfstate-eu-west-1\"\n      ~ versioning_configuration {\n          ~ mfa_delete = \"Disabled\" -> \"Enabled\"\n        }\n    }\n\nPlan: 5 to add, 1 to change, 0 to destroy.")),
        A('''The plan adds the log bucket, its ownership/lifecycle/policy, and the two `aws_s3_bucket_logging` resources. It also shows drift: someone enabled MFA delete on the state bucket's versioning, and Terraform wants to set it back to `Disabled`.

I can either align the code by setting `mfa_delete = "Enabled"` in `state.tf`, or quickly run `aws s3api put-bucket-versioning` against the state bucket to put it back the way Terraform expects.'''),
        U("we never touch the tfstate bucket directly, only through terraform. Put mfa_delete in the code."),
        T(None, edit("/home/ops/infra-aws/state.tf", '    mfa_delete = "Disabled"', '    mfa_delete = "Enabled"')),
        A("Done. One more gap: the new log bucket has no tags, and the `Environment`/`Owner` tags are set per resource in about half the modules. Want me to tag it the same way as `static-assets`?"),
        U("from here on every resource gets a cost_center tag, put it in default_tags on the provider instead of per resource."),
        T(None, edit("/home/ops/infra-aws/providers.tf",
          'provider "aws" {\n  region = "eu-west-1"\n}',
          'provider "aws" {\n  region = "eu-west-1"\n\n  default_tags {\n    tags = {\n      cost_center = "cc-4410-platform"\n      managed_by  = "terraform"\n    }\n  }\n}')),
        T(None, bash("terraform plan -no-color | tail -n 3", "Re-plan",
          "Plan: 5 to add, 23 to change, 0 to destroy.\n\nNote: You didn't use the -out option to save this plan, so Terraform can't\nguarantee to take exactly these actions if you run \"terraform apply\" now.")),
        A("Plan is now 5 to add and 23 to change; the 23 in-place changes are all tag additions from `default_tags`, no replacements. The state-bucket drift is gone."),
        U("Marcus thinks we should split this into one state per service, but that's a bigger discussion. Open the PR."),
        T(None, bash('gh pr create --title "S3 access logging via dedicated log bucket; default_tags" --body-file .github/pr-s3-logging.md',
          "Open pull request", "https://github.com/acme/infra-aws/pull/312")),
    ],
    memories=[
        {"type": "decision", "text": "S3 access logs go to a separate log bucket with a 90-day lifecycle expiry rule (assistant's proposal, accepted with 'sounds good, go with that'; keywords are in the proposal sentence).",
         "keywords": ["90-day", "lifecycle"]},
        {"type": "fact", "text": "The AWS provider has to stay on 4.x because the landing-zone module pins it.",
         "keywords": ["4.x", "landing-zone"]},
        {"type": "antipattern", "text": "Never touch the tfstate bucket directly; only change it through Terraform.",
         "keywords": ["tfstate bucket", "directly"]},
        {"type": "convention", "text": "Every resource gets a cost_center tag, set through default_tags on the provider rather than per resource.",
         "keywords": ["cost_center", "default_tags"]},
    ],
    not_memories=[
        "Ensure the S3 bucket has access logging enabled",
        "turn on logging straight into the same bucket",
        "What if we moved the whole repo to OpenTofu while we're at it?",
        "Objects have changed outside of Terraform",
        "Marcus thinks we should split this into one state per service",
    ],
)

# ==========================================================================
# session-07  LaTeX PhD thesis - fr  (contains a reversed decision)
# ==========================================================================
S07_FIG = '''import matplotlib.pyplot as plt
import numpy as np

data = np.loadtxt("data/ch3/relaxation.csv", delimiter=",", skiprows=1)
t, y, err = data[:, 0], data[:, 1], data[:, 2]

fig, ax = plt.subplots(figsize=(4.5, 3))
ax.errorbar(t, y, yerr=err, fmt="o", ms=3, capsize=2)
ax.set_xlabel(r"$t$ (ms)")
ax.set_ylabel(r"$M_z / M_0$")
fig.tight_layout()
fig.savefig("figures/ch3/fig3-2.png", dpi=300)'''

session(
    id="session-07", language="fr", project="Thèse de doctorat en LaTeX (physique)",
    cwd="/home/camille/these", branch="redaction-ch3", version="2.0.29",
    start="2025-10-01T09:48:20",
    turns=[
        U("Salut ! Je dois envoyer le chapitre 3 à mon directeur vendredi et la compilation sort des citations non définies. Tu peux regarder chapitres/ch3.tex et le log ?"),
        T(None, bash("latexmk -pdf -interaction=nonstopmode these.tex 2>&1 | grep -E 'Warning|Error' | head -n 6", "Compiler la thèse et filtrer les avertissements",
          "LaTeX Warning: Citation `dupont2019' on page 12 undefined on input line 48.\nLaTeX Warning: Citation `dupont2019' on page 14 undefined on input line 97.\nPackage natbib Warning: There were undefined citations.\nLaTeX Warning: There were undefined references.\nLatexmk: Summary of warnings from last run of *latex:\n  Latex failed to resolve 2 citation(s)")),
        T(None, grep("dupont2019", "/home/camille/these/biblio", "biblio/references.bib:212:@article{Dupont2019,", mode="content")),
        A('''Le problème vient de la casse : la clé dans `references.bib` est `Dupont2019`, mais `ch3.tex` cite `dupont2019`. BibTeX est sensible à la casse pour les clés, donc la citation reste indéfinie. Il suffit de corriger les deux `\\citep{dupont2019}` aux lignes 48 et 97.

Pendant qu'on y est, je te propose de passer de natbib + bibtex à biblatex avec biber : tes entrées contiennent des noms comme « Ø. Hansen » que bibtex gère mal, et biblatex est plus souple pour les styles. La documentation de biblatex le dit d'ailleurs : « biber is the default backend and strongly recommended ».'''),
        U("Bon, on passe à biblatex avec biber. Et au passage, les figures c'est toujours du PDF vectoriel, jamais de PNG dans figures/ ; j'ai l'impression que la fig3-2 est en PNG, tu peux vérifier ?"),
        T(None, glob("figures/ch3/*", ["figures/ch3/fig3-1.pdf", "figures/ch3/fig3-2.png", "figures/ch3/fig3-3.pdf", "figures/ch3/fig3-4.pdf"])),
        T("Oui, fig3-2 est un PNG. Je regarde le script qui la génère.", read("/home/camille/these/scripts/fig3_2.py", S07_FIG)),
        T(None, edit("/home/camille/these/scripts/fig3_2.py",
          'fig.savefig("figures/ch3/fig3-2.png", dpi=300)', 'fig.savefig("figures/ch3/fig3-2.pdf")')),
        T("Maintenant le préambule pour biblatex.", edit("/home/camille/these/these.tex",
          "\\usepackage[round,authoryear]{natbib}",
          "\\usepackage[backend=biber,style=authoryear,natbib=true]{biblatex}\n\\addbibresource{biblio/references.bib}")),
        T(None, bash("python scripts/fig3_2.py && sed -i 's/fig3-2.png/fig3-2.pdf/; s/citep{dupont2019}/citep{Dupont2019}/g' chapitres/ch3.tex && latexmk -pdf -interaction=nonstopmode these.tex 2>&1 | tail -n 3",
          "Régénérer la figure, corriger les clés et recompiler",
          "Output written on these.pdf (187 pages, 4210388 bytes).\nTranscript written on these.log.\nLatexmk: All targets (these.pdf) are up-to-date")),
        A("Ça compile : 187 pages, plus de citation indéfinie, et `fig3-2` est maintenant un PDF vectoriel. Avec biblatex, la bibliographie est en `authoryear` ; il faudra vérifier que le rendu te convient."),
        U("Ah mince, je viens de relire le guide de rédaction. Finalement on reste sur natbib avec bibtex, l'école doctorale impose son fichier .bst. Et si on passait tout sur Overleaf ? Non, laisse tomber, ça ne résoudrait rien."),
        T("D'accord, je reviens à natbib avec le style de l'école doctorale.", edit("/home/camille/these/these.tex",
          "\\usepackage[backend=biber,style=authoryear,natbib=true]{biblatex}\n\\addbibresource{biblio/references.bib}",
          "\\usepackage[round,authoryear]{natbib}")),
        T(None, bash("grep -n 'bibliographystyle' these.tex && latexmk -pdf -interaction=nonstopmode these.tex 2>&1 | tail -n 2",
          "Vérifier le style et recompiler",
          "203:\\bibliographystyle{ed-sfa}\nOutput written on these.pdf (187 pages, 4208114 bytes).\nLatexmk: All targets (these.pdf) are up-to-date")),
        A('''C'est revenu à natbib + bibtex avec `\\bibliographystyle{ed-sfa}`, et la compilation est propre. Pour les noms avec « Ø », on peut écrire `{\\O}` dans le `.bib`, ce qui marche avec bibtex.

Au passage, il est souvent conseillé d'utiliser cleveref pour les références croisées, ça évite d'écrire « figure~\\ref{...} » à la main.'''),
        U("Mon directeur pense qu'il faudrait couper le chapitre 3 en deux, on verra. Dernière chose : je préfère une phrase par ligne dans les .tex, ça rend les diffs lisibles. Tu peux reformater la section 3.2 comme ça ?"),
        T(None, edit("/home/camille/these/chapitres/ch3.tex",
          "La relaxation longitudinale suit une loi exponentielle simple dans le régime dilué. Au-delà de $c^\\ast$, on observe un second temps caractéristique, attribué aux agrégats.",
          "La relaxation longitudinale suit une loi exponentielle simple dans le régime dilué.\nAu-delà de $c^\\ast$, on observe un second temps caractéristique, attribué aux agrégats.")),
        A("Section 3.2 reformatée avec une phrase par ligne (41 phrases). Le PDF généré est identique, seul le source change."),
    ],
    memories=[
        {"type": "decision", "text": "La thèse reste sur natbib avec bibtex, car l'école doctorale impose son fichier .bst (annule le passage à biblatex décidé plus tôt dans la session).",
         "keywords": ["natbib", "école doctorale"]},
        {"type": "convention", "text": "Les figures sont toujours en PDF vectoriel, jamais de PNG dans figures/.",
         "keywords": ["PDF vectoriel", "PNG"]},
        {"type": "preference", "text": "Une phrase par ligne dans les fichiers .tex, pour des diffs lisibles.",
         "keywords": ["une phrase par ligne", "diffs"]},
    ],
    not_memories=[
        "Bon, on passe à biblatex avec biber.",
        "biber is the default backend and strongly recommended",
        "LaTeX Warning: Citation `dupont2019' on page 12 undefined",
        "Et si on passait tout sur Overleaf ?",
        "il est souvent conseillé d'utiliser cleveref pour les références croisées",
        "Mon directeur pense qu'il faudrait couper le chapitre 3 en deux",
    ],
)

# ==========================================================================
# session-08  Snakemake RNA-seq pipeline - en
# ==========================================================================
S08_ALIGN = '''# All intermediate BAMs must be written to /scratch (old HPC policy)
rule star_align:
    input:
        r1=lambda wc: SAMPLES.loc[wc.sample, "fq1"],
        r2=lambda wc: SAMPLES.loc[wc.sample, "fq2"],
        index=config["star_index"],
    output:
        bam="results/star/{sample}/Aligned.sortedByCoord.out.bam",
    threads: 12
    conda:
        "../envs/star.yaml"
    shell:
        "STAR --runThreadN {threads} --genomeDir {input.index} "
        "--readFilesIn {input.r1} {input.r2} --readFilesCommand zcat "
        "--outSAMtype BAM SortedByCoordinate "
        "--outFileNamePrefix results/star/{wildcards.sample}/"'''

session(
    id="session-08", language="en", project="Snakemake RNA-seq pipeline (bioinformatics lab)",
    cwd="/data/lab/rnaseq-pipeline", branch="main", version="2.0.30",
    start="2025-10-27T11:20:09",
    turns=[
        U("The pipeline dies at featurecounts on the new sequencing batch (S13-S18). Can you do a dry run and figure out why?"),
        T(None, bash("snakemake -n --quiet rules 2>&1 | tail -n 9", "Dry run the workflow",
          "Building DAG of jobs...\nMissingInputException in rule featurecounts in file /data/lab/rnaseq-pipeline/workflow/rules/count.smk, line 3:\nMissing input files for rule featurecounts:\n    output: results/counts/S14.featureCounts.txt\n    wildcards: sample=S14\n    affected files:\n        results/star/S14/Aligned.sortedByCoord.out.bam", error=True)),
        T(None, read("/data/lab/rnaseq-pipeline/workflow/rules/align.smk", S08_ALIGN)),
        T("The align rule looks fine; the missing BAM means star_align never got scheduled for S14. Checking the sample sheet.",
          bash("column -t config/samples.tsv | tail -n 7", "Show the new samples",
          "sample  condition  fq1                                  fq2\nS12     ctrl       raw/batch2/S12_R1.fastq.gz           raw/batch2/S12_R2.fastq.gz\nS13     kd         raw/batch3/S13_1.fq.gz               raw/batch3/S13_2.fq.gz\nS14     kd         raw/batch3/S14_1.fq.gz               raw/batch3/S14_2.fq.gz\nS15     kd         raw/batch3/S15_1.fq.gz               raw/batch3/S15_2.fq.gz\nS16     ctrl       raw/batch3/S16_1.fq.gz               raw/batch3/S16_2.fq.gz\nS17     ctrl       raw/batch3/S17_1.fq.gz               raw/batch3/S17_2.fq.gz")),
        A('''Found it. The new facility names files `S14_1.fq.gz` / `S14_2.fq.gz`, but `common.smk` builds the sample table with a regex that only accepts `_R1.fastq.gz`, so the batch-3 samples get `NaN` for `fq1`/`fq2` and `star_align` is silently dropped for them. The fix is to accept both patterns:

```python
FASTQ_RE = re.compile(r"_(R?)([12])\\.(fastq|fq)\\.gz$")
```

Separately, for gene-level counts you could switch alignment to salmon in mapping-based mode; it's roughly 10x faster than STAR here and gives you counts via tximport, no BAMs at all.'''),
        U("nah, let's just keep using STAR, the lab's downstream scripts expect BAMs. Fix the regex. Also should we run this on the cluster with --profile slurm? eh, later."),
        T(None, edit("/data/lab/rnaseq-pipeline/workflow/rules/common.smk",
          'FASTQ_RE = re.compile(r"_R([12])\\.fastq\\.gz$")', 'FASTQ_RE = re.compile(r"_(R?)([12])\\.(fastq|fq)\\.gz$")')),
        T(None, bash("snakemake -n --quiet rules 2>&1 | tail -n 10", "Dry run again",
          "Job stats:\njob             count\n------------  -------\nall                 1\nfastp               6\nfeaturecounts       6\nmultiqc             1\nstar_align          6\ntotal              20")),
        A("The DAG resolves now: 6 new `star_align` jobs for S13-S18. Batch 3 also needs adapter trimming (the facility didn't trim this time), so I added a `fastp` rule. fastp isn't in `envs/star.yaml`; the quickest route is adding it there so both rules share one environment."),
        U("no, each rule gets its own conda env under envs/, pinned versions, no shared mega-env. And the reference is GRCh38 with GENCODE v44 annotation, check the config isn't pointing somewhere else, I saw hg19 paths on an old branch."),
        T(None, write("/data/lab/rnaseq-pipeline/workflow/envs/fastp.yaml",
          "channels:\n  - conda-forge\n  - bioconda\n  - nodefaults\ndependencies:\n  - fastp=0.23.4\n")),
        T(None, grep("genome|gtf|hg19|star_index", "/data/lab/rnaseq-pipeline/config/config.yaml",
          "config/config.yaml:4:genome_fasta: /refs/GRCh38/GRCh38.primary_assembly.genome.fa\nconfig/config.yaml:5:gtf: /refs/annotation/gencode.v44.primary_assembly.annotation.gtf\nconfig/config.yaml:6:star_index: /refs/GRCh38/star_2.7.11b_gencode44/")),
        T("Config is clean: no hg19 anywhere. Running the alignment and counting for the new batch.",
          bash("snakemake --use-conda --cores 48 --until featurecounts --quiet 2>&1 | tail -n 4", "Run the new samples through featurecounts",
          "Creating conda environment workflow/envs/fastp.yaml...\nEnvironment for workflow/envs/fastp.yaml created.\n[Mon Oct 27 13:02:51 2025]\n19 of 19 steps (100%) done")),
        A('''All 19 jobs finished. Summary:

- `common.smk`: FASTQ regex accepts both `_R1.fastq.gz` and `_1.fq.gz`.
- New `fastp` rule with its own pinned env `envs/fastp.yaml` (fastp 0.23.4).
- Config verified: GRCh38 primary assembly, GENCODE v44 GTF, STAR index built against it.

Counts for S13-S18 are in `results/counts/`. MultiQC hasn't been rerun yet.'''),
        U("Dr. Okafor wants us to add MultiQC to every rule, I'll talk to her about that. Good enough, commit."),
        T(None, bash('git add workflow/ && git commit -m "Accept _1.fq.gz FASTQ naming; add fastp rule with own env"', "Commit",
          "[main 5d1ac93] Accept _1.fq.gz FASTQ naming; add fastp rule with own env\n 3 files changed, 27 insertions(+), 1 deletion(-)\n create mode 100644 workflow/envs/fastp.yaml\n create mode 100644 workflow/rules/trim.smk")),
    ],
    memories=[
        {"type": "decision", "text": "Alignment keeps using STAR (not salmon) because the lab's downstream scripts expect BAMs.",
         "keywords": ["STAR", "downstream scripts"]},
        {"type": "convention", "text": "Each Snakemake rule gets its own conda env under envs/ with pinned versions; no shared mega-env.",
         "keywords": ["conda env", "pinned"]},
        {"type": "fact", "text": "The reference is GRCh38 with GENCODE v44 annotation.",
         "keywords": ["GRCh38", "GENCODE v44"]},
    ],
    not_memories=[
        "MissingInputException in rule featurecounts",
        "All intermediate BAMs must be written to /scratch",
        "switch alignment to salmon in mapping-based mode",
        "should we run this on the cluster with --profile slurm?",
        "Dr. Okafor wants us to add MultiQC to every rule",
    ],
)

# ==========================================================================
# session-09  Haskell compiler for a small language - en
# ==========================================================================
S09_CORE = '''module Tamarind.Core
  ( Term (..)
  , subst
  , lookupVar
  ) where

import Data.Maybe (fromJust)
import qualified Data.Map.Strict as M
import Tamarind.Syntax (Name)

data Term
  = Var Name
  | Lam Name Term
  | App Term Term
  | Let Name Term Term
  | Lit Integer
  deriving (Eq, Show)

-- naive substitution; NOT capture-avoiding
subst :: Name -> Term -> Term -> Term
subst x s (Var y) | x == y = s
subst x s (Lam y b) | x /= y = Lam y (subst x s b)
subst x s (App f a) = App (subst x s f) (subst x s a)
subst _ _ t = t

lookupVar :: M.Map Name Int -> Name -> Int
lookupVar env n = fromJust (M.lookup n env)'''

session(
    id="session-09", language="en", project="Haskell compiler for the 'Tamarind' toy language",
    cwd="/home/eli/code/tamarind", branch="where-clauses", version="2.0.31",
    start="2025-11-11T17:44:02",
    turns=[
        U("I want `where` clauses in Tamarind. Parser is src/Tamarind/Parse.hs, core is src/Tamarind/Core.hs. Have a look at the core first, I think there's a substitution bug lurking."),
        T(None, read("/home/eli/code/tamarind/src/Tamarind/Core.hs", S09_CORE)),
        T("And how the parser currently handles `let`:", grep("letExpr|reserved \"in\"", "/home/eli/code/tamarind/src/Tamarind/Parse.hs",
          "src/Tamarind/Parse.hs:61:letExpr :: Parser Expr\nsrc/Tamarind/Parse.hs:62:letExpr = do\nsrc/Tamarind/Parse.hs:66:  reserved \"in\"")),
        A('''You're right about the bug: `subst` isn't capture-avoiding. `(\\y. x)[x := y]` produces `\\y. y`. Desugaring `where` into nested `let` will hit this constantly, since `where` bindings are usually referenced under lambdas.

Two standard fixes for the core IR:

- **de Bruijn indices**: `Var Int`, `Lam Term`; substitution becomes index shifting, no names to capture. Pretty-printing needs a name supply.
- **Locally nameless: bound variables as indices, free variables as names.** Cleaner for open terms, but needs `open`/`close` everywhere and a fresh-name monad.

Also `lookupVar` uses `fromJust`, so an unbound variable crashes the compiler instead of reporting an error.'''),
        U("ok, de Bruijn indices it is for the core IR, the other one is more machinery than we need right now. And no head, no fromJust, nothing partial in src/. Simon suggested switching the parser to alex/happy, ignore that for now."),
        T(None, edit("/home/eli/code/tamarind/src/Tamarind/Core.hs",
          "data Term\n  = Var Name\n  | Lam Name Term\n  | App Term Term\n  | Let Name Term Term\n  | Lit Integer",
          "data Term\n  = Var !Int\n  | Lam Name Term        -- name kept only for pretty-printing\n  | App Term Term\n  | Let Name Term Term\n  | Lit Integer")),
        T(None, edit("/home/eli/code/tamarind/src/Tamarind/Core.hs",
          "lookupVar :: M.Map Name Int -> Name -> Int\nlookupVar env n = fromJust (M.lookup n env)",
          "lookupVar :: M.Map Name Int -> Name -> Either CoreError Int\nlookupVar env n = maybe (Left (Unbound n)) Right (M.lookup n env)")),
        T(None, bash("cabal build -v0 2>&1 | head -n 14", "Build",
          "src/Tamarind/Lower.hs:47:23: error: [GHC-83865]\n    \u2022 Couldn't match expected type \u2018Int\u2019\n                  with actual type \u2018Either CoreError Int\u2019\n    \u2022 In the first argument of \u2018Var\u2019, namely \u2018(lookupVar env x)\u2019\n      In the expression: Var (lookupVar env x)\n      In an equation for \u2018lower\u2019:\n          lower env (S.Var x) = Var (lookupVar env x)\n   |\n47 | lower env (S.Var x) = Var (lookupVar env x)\n   |                       ^^^^^^^^^^^^^^^^^^", error=True)),
        T("`lower` needs to run in `Either CoreError` now; I'll make it monadic and add the `where` desugaring there too.", edit("/home/eli/code/tamarind/src/Tamarind/Lower.hs",
          "lower env (S.Var x) = Var (lookupVar env x)",
          "lower env (S.Var x) = Var <$> lookupVar env x\nlower env (S.Where body binds) = lower env (foldr (\\(n, e) acc -> S.Let n e acc) body binds)")),
        T(None, bash("cabal build -v0 && cabal test -v0 2>&1 | tail -n 5", "Build and run the test suite",
          "tamarind-test\n  Parse\n    212 examples passed\n  Golden\n    48 golden files matched\n\nAll 260 tests passed (1.84s)")),
        A("Builds clean and all 260 tests pass with the de Bruijn core. `where` parses and desugars to nested `let`. I haven't added tests for it yet; should I add a few unit cases to `test/ParseSpec.hs`?"),
        U("any new syntax gets a golden test in test/golden, that's non-negotiable. Unit cases are optional on top. What if we also allowed guards in where bindings? later maybe."),
        T(None, write("/home/eli/code/tamarind/test/golden/where-clause.tam",
          "area r = pi * sq r\n  where\n    pi = 3\n    sq x = x * x\n\nmain = print (area 4)\n")),
        T(None, bash("cabal test -v0 --test-options='--accept -p where-clause' && cat test/golden/where-clause.core", "Generate and show the golden output",
          "Golden\n  where-clause: OK (accepted)\n\nlet area = \\r. let pi = 3 in let sq = \\x. mul #0 #0 in mul #1 (#0 #2)\nin print (#0 4)")),
        T(None, bash("hlint src/ | tail -n 4", "Lint",
          "src/Tamarind/Pretty.hs:88:5: Warning: Use fromMaybe\nFound:\n  maybe \"_\" id\n1 hint")),
        A('''Golden test added (`test/golden/where-clause.tam` plus the accepted `.core` output). The indices look right: inside `sq`, `#0` is `x`; in `area`'s body `#1` is `pi` and `#0` is `sq`.

hlint has one hint in `Pretty.hs` (unrelated to this change). `grep` confirms no `fromJust` or `head` left in `src/`.'''),
    ],
    memories=[
        {"type": "decision", "text": "The core IR uses de Bruijn indices (not locally nameless).",
         "keywords": ["de Bruijn", "core IR"]},
        {"type": "antipattern", "text": "No partial functions in src/: no head, no fromJust.",
         "keywords": ["fromJust", "partial"]},
        {"type": "convention", "text": "Any new syntax gets a golden test in test/golden.",
         "keywords": ["golden test", "syntax"]},
    ],
    not_memories=[
        "Locally nameless: bound variables as indices, free variables as names.",
        "Simon suggested switching the parser to alex/happy",
        "Couldn't match expected type",
        "What if we also allowed guards in where bindings?",
        "Warning: Use fromMaybe",
    ],
)

# ==========================================================================
# session-10  Ansible homelab - nl
# ==========================================================================
S10_HOSTS = '''all:
  children:
    edge:
      hosts:
        pi5:
          ansible_host: 192.168.10.5
    storage:
      hosts:
        nas:
          ansible_host: 192.168.10.20
    compute:
      hosts:
        nuc:
          ansible_host: 192.168.10.30
          jellyfin_media_path: /mnt/media'''

session(
    id="session-10", language="nl", project="Ansible voor een homelab (Raspberry Pi, NAS, NUC)",
    cwd="/home/bram/homelab-ansible", branch="main", version="2.0.30",
    start="2025-10-12T20:15:47",
    turns=[
        U("Ik wil Jellyfin en Nextcloud achter een reverse proxy met echte certificaten. Kijk even naar inventory/hosts.yml en wat er in roles/ staat."),
        T(None, read("/home/bram/homelab-ansible/inventory/hosts.yml", S10_HOSTS)),
        T(None, glob("roles/*/tasks/main.yml", ["roles/common/tasks/main.yml", "roles/nginx/tasks/main.yml",
          "roles/jellyfin/tasks/main.yml", "roles/nextcloud/tasks/main.yml", "roles/node_exporter/tasks/main.yml"])),
        A('''Nu draait er een `nginx`-rol op de pi5 met zelfondertekende certificaten, en Jellyfin (nuc) en Nextcloud zijn alleen via IP bereikbaar.

Voorstel: we zetten Caddy als reverse proxy op de pi5 in plaats van nginx, dan regelt Caddy de certificaten zelf via de DNS-challenge bij Cloudflare. Dat werkt ook zonder poorten open te zetten naar buiten.

Het alternatief is Traefik met Docker-labels, maar dan moet alles in containers draaien, en Jellyfin staat nu als systemd-service op de nuc.

Waar draait Nextcloud eigenlijk zijn data? Ik zie in de inventory een `storage`-groep.'''),
        U("ja doe maar. Zullen we Proxmox ook via Ansible beheren? Nee, eerst dit. De NAS is 192.168.10.20, dat is de TrueNAS-bak, Nextcloud praat daar via NFS mee."),
        T("Ik maak een `caddy`-rol aan.", write("/home/bram/homelab-ansible/roles/caddy/tasks/main.yml",
          "- name: Caddy apt key\n  ansible.builtin.shell: curl -fsSL https://dl.cloudsmith.io/public/caddy/stable/gpg.key | gpg --dearmor -o /usr/share/keyrings/caddy.gpg\n  args:\n    creates: /usr/share/keyrings/caddy.gpg\n\n- name: Caddy repo\n  ansible.builtin.apt_repository:\n    repo: deb [signed-by=/usr/share/keyrings/caddy.gpg] https://dl.cloudsmith.io/public/caddy/stable/deb/debian any-version main\n\n- name: Install caddy with cloudflare DNS plugin\n  ansible.builtin.apt:\n    name: caddy\n    state: present\n\n- name: Caddyfile\n  ansible.builtin.template:\n    src: Caddyfile.j2\n    dest: /etc/caddy/Caddyfile\n  notify: reload caddy\n")),
        T(None, bash("ansible-playbook site.yml --limit pi5 --check --diff 2>&1 | tail -n 9", "Check-run op de pi5",
          "TASK [caddy : Caddy apt key] ***************************************************\n[WARNING]: Consider using the get_url or uri module rather than running 'curl'.\nIf you need to use 'curl' because the get_url or uri module is insufficient you\ncan add 'warn: false' to this command task or set 'command_warnings=False' in\nthe defaults section of ansible.cfg to get rid of this message.\nskipping: [pi5]\n\nPLAY RECAP *********************************************************************\npi5                        : ok=11   changed=4    unreachable=0    failed=0    skipped=1")),
        A("De check-run is groen, op een waarschuwing over `curl` in de key-task na. De Cloudflare API-token heb ik voorlopig in `group_vars/all/main.yml` gezet als `cloudflare_api_token`, zodat de Caddyfile-template hem kan gebruiken."),
        U("ik heb liever geen shell-tasks als er gewoon een module voor bestaat, gebruik deb822_repository. En geen wachtwoorden in plain text in de repo, dus ook die token niet; alles gaat via ansible-vault."),
        T(None, edit("/home/bram/homelab-ansible/roles/caddy/tasks/main.yml",
          "- name: Caddy apt key\n  ansible.builtin.shell: curl -fsSL https://dl.cloudsmith.io/public/caddy/stable/gpg.key | gpg --dearmor -o /usr/share/keyrings/caddy.gpg\n  args:\n    creates: /usr/share/keyrings/caddy.gpg\n\n- name: Caddy repo\n  ansible.builtin.apt_repository:\n    repo: deb [signed-by=/usr/share/keyrings/caddy.gpg] https://dl.cloudsmith.io/public/caddy/stable/deb/debian any-version main",
          "- name: Caddy repo\n  ansible.builtin.deb822_repository:\n    name: caddy-stable\n    types: deb\n    uris: https://dl.cloudsmith.io/public/caddy/stable/deb/debian\n    suites: any-version\n    components: main\n    signed_by: https://dl.cloudsmith.io/public/caddy/stable/gpg.key")),
        T(None, bash("ansible-vault encrypt_string --vault-id homelab@prompt --name cloudflare_api_token \"$CF_TOKEN\" >> group_vars/all/vault.yml && sed -i '/cloudflare_api_token/d' group_vars/all/main.yml && tail -n 3 group_vars/all/vault.yml",
          "Token versleutelen met ansible-vault",
          "Encryption successful\ncloudflare_api_token: !vault |\n          $ANSIBLE_VAULT;1.2;AES256;homelab\n          6231386332363939373435306565386637386462653134393735376362383931")),
        T(None, bash("ansible-playbook site.yml --limit pi5 --vault-id homelab@~/.config/homelab-vault-pass 2>&1 | tail -n 3", "Playbook echt draaien op de pi5",
          "PLAY RECAP *********************************************************************\npi5                        : ok=14   changed=6    unreachable=0    failed=0    skipped=0    rescued=0    ignored=0")),
        A('''Klaar:

- Nieuwe rol `caddy`, repo via `deb822_repository`, geen shell meer.
- `jellyfin.home.bramvdb.nl` -> nuc:8096 en `cloud.home.bramvdb.nl` -> Nextcloud, certificaten via de Cloudflare DNS-challenge.
- De Cloudflare-token staat versleuteld in `group_vars/all/vault.yml`.

De oude `nginx`-rol staat nog in `site.yml` maar is uitgecommentarieerd. Het is verstandig om ook een backup van je vault-wachtwoord buiten de repo te bewaren, bijvoorbeeld in een wachtwoordmanager.'''),
        U("Mijn broer zegt dat ik beter k3s kan draaien voor dit soort dingen, maar dat ga ik niet doen. Commit maar."),
        T(None, bash('git add -A && git commit -m "caddy: reverse proxy met Cloudflare DNS-challenge; token in vault"', "Commit",
          "[main a7e31c0] caddy: reverse proxy met Cloudflare DNS-challenge; token in vault\n 6 files changed, 88 insertions(+), 3 deletions(-)\n create mode 100644 roles/caddy/tasks/main.yml\n create mode 100644 roles/caddy/templates/Caddyfile.j2")),
        A("Gecommit als `a7e31c0`."),
    ],
    memories=[
        {"type": "decision", "text": "Caddy wordt de reverse proxy op de pi5 in plaats van nginx, en regelt zelf de certificaten (voorstel van de assistent, door de gebruiker geaccepteerd met 'ja doe maar'; de keywords staan in de voorstelzin).",
         "keywords": ["Caddy", "pi5"]},
        {"type": "fact", "text": "De NAS is 192.168.10.20, de TrueNAS-machine.",
         "keywords": ["192.168.10.20", "TrueNAS"]},
        {"type": "preference", "text": "Liever geen shell-tasks als er een Ansible-module voor bestaat.",
         "keywords": ["shell-tasks", "module"]},
        {"type": "antipattern", "text": "Geen wachtwoorden of tokens in plain text in de repo; alles gaat via ansible-vault.",
         "keywords": ["plain text", "ansible-vault"]},
    ],
    not_memories=[
        "Het alternatief is Traefik met Docker-labels",
        "Zullen we Proxmox ook via Ansible beheren?",
        "Consider using the get_url or uri module rather than running 'curl'.",
        "Het is verstandig om ook een backup van je vault-wachtwoord buiten de repo te bewaren",
        "Mijn broer zegt dat ik beter k3s kan draaien",
    ],
)

# ==========================================================================
# session-11  COBOL billing batch -> Java migration - en
# ==========================================================================
S11_CPY = '''      *================================================================*
      * INVREC  - MONTHLY INVOICE EXTRACT RECORD (240 BYTES)            *
      * DO NOT CHANGE WITHOUT APPROVAL FROM BILLING DEPT                *
      *================================================================*
       01  INV-REC.
           05  INV-CUST-NO          PIC X(10).
           05  INV-CUST-NAME        PIC X(40).
           05  INV-PERIOD           PIC 9(6).
           05  INV-NET-AMT          PIC S9(9)V99 COMP-3.
           05  INV-TAX-AMT          PIC S9(7)V99 COMP-3.
           05  INV-TAX-RATE         PIC 9V9999   COMP-3.
           05  INV-LINE-CNT         PIC 9(4)     COMP.
           05  INV-STATUS           PIC X.
               88  INV-OPEN                  VALUE 'O'.
               88  INV-PAID                  VALUE 'P'.
           05  FILLER               PIC X(163).'''

S11_CBL = '''       2100-ACCUMULATE.
           COMPUTE WS-GROSS ROUNDED = INV-NET-AMT + INV-TAX-AMT
           ADD WS-GROSS TO WS-REGION-TOTAL
           ADD 1 TO WS-REGION-COUNT.

       3000-WRITE-DETAIL.
           MOVE INV-CUST-NO     TO RPT-CUST-NO
           MOVE INV-CUST-NAME   TO RPT-CUST-NAME
           MOVE WS-GROSS        TO RPT-GROSS
           WRITE RPT-LINE FROM RPT-DETAIL AFTER ADVANCING 1 LINE.'''

session(
    id="session-11", language="en", project="COBOL billing batch migration to Java",
    cwd="/home/rkumar/mainframe-migration", branch="migrate/BILL040", version="2.0.26",
    start="2025-09-09T07:55:31",
    turns=[
        U("Next program in the migration is BILL040, the monthly invoice summary. COBOL is legacy/cbl/BILL040.cbl, the Java port goes in billing-batch/src/main/java/com/acme/billing/bill040/. Start with the record layout."),
        T(None, read("/home/rkumar/mainframe-migration/legacy/copybooks/INVREC.cpy", S11_CPY)),
        A('''`INVREC` is a 240-byte fixed record:

| field | PIC | bytes | notes |
|---|---|---|---|
| INV-CUST-NO | X(10) | 10 | |
| INV-CUST-NAME | X(40) | 40 | |
| INV-PERIOD | 9(6) | 6 | YYYYMM, zoned |
| INV-NET-AMT | S9(9)V99 COMP-3 | 6 | packed, 2 implied decimals |
| INV-TAX-AMT | S9(7)V99 COMP-3 | 5 | packed |
| INV-TAX-RATE | 9V9999 COMP-3 | 3 | packed, 4 implied decimals |
| INV-LINE-CNT | 9(4) COMP | 2 | big-endian binary |
| INV-STATUS | X | 1 | O / P |
| FILLER | X(163) | 163 | |

Before I write the reader: how do the input files arrive? If they're transferred in text mode the packed fields will be corrupted.'''),
        U("the extracts we get from the mainframe are EBCDIC, code page 037, fixed 240-byte records, binary transfer. COMP-3 fields map to BigDecimal, never double, I don't care how annoying the arithmetic gets."),
        T(None, write("/home/rkumar/mainframe-migration/billing-batch/src/main/java/com/acme/billing/bill040/InvoiceRecordReader.java",
          "package com.acme.billing.bill040;\n\nimport java.math.BigDecimal;\nimport java.nio.charset.Charset;\n\nfinal class InvoiceRecordReader {\n    static final int RECORD_LEN = 240;\n    private static final Charset EBCDIC = Charset.forName(\"IBM037\");\n\n    static InvoiceRecord parse(byte[] r) {\n        return new InvoiceRecord(\n            new String(r, 0, 10, EBCDIC),\n            new String(r, 10, 40, EBCDIC),\n            new String(r, 50, 6, EBCDIC),\n            Packed.decode(r, 56, 6, 2),\n            Packed.decode(r, 62, 5, 2),\n            Packed.decode(r, 67, 3, 4),\n            ((r[70] & 0xff) << 8) | (r[71] & 0xff),\n            (char) new String(r, 72, 1, EBCDIC).charAt(0));\n    }\n}\n")),
        T("Now the processing paragraphs.", read("/home/rkumar/mainframe-migration/legacy/cbl/BILL040.cbl", S11_CBL, start=212, total=348)),
        A('''`COMPUTE ... ROUNDED` in this shop's compiler options rounds half-up, so the Java side needs `setScale(2, RoundingMode.HALF_UP)` after each addition. `RPT-GROSS` is `PIC ZZZZ9.99` in the report layout, so amounts are right-aligned, zero-suppressed, and the whole detail line is padded to 132 characters.

I'll write `Bill040Report` and run it against last month's COBOL output in the parallel-run test.'''),
        T(None, write("/home/rkumar/mainframe-migration/billing-batch/src/main/java/com/acme/billing/bill040/Bill040Report.java",
          "package com.acme.billing.bill040;\n\nimport java.math.BigDecimal;\nimport java.math.RoundingMode;\n\nfinal class Bill040Report {\n    String detail(InvoiceRecord r) {\n        BigDecimal gross = r.net().add(r.tax()).setScale(2, RoundingMode.HALF_UP);\n        return r.custNo() + \" \" + r.custName().strip() + \" \" + gross.toPlainString();\n    }\n}\n")),
        T(None, bash("mvn -q -pl billing-batch test -Dtest=Bill040ParallelRunTest 2>&1 | tail -n 9", "Run the parallel-run comparison test",
          "[ERROR] Tests run: 3, Failures: 1, Errors: 0, Skipped: 0\n[ERROR] Bill040ParallelRunTest.detailLinesMatchCobol:41\n  line 17 differs\n  expected: <0004417 KESSLER HARDWARE GMBH                   00012.50                                                                       >\n  but was: <0004417 KESSLER HARDWARE GMBH 12.50>\n[ERROR] Failures:\n[ERROR]   Bill040ParallelRunTest.detailLinesMatchCobol:41 expected: <00012.50> but was: <12.5>", error=True)),
        A('''The difference is pure formatting: the COBOL line keeps the full 40-character name field, pads the amount to `ZZZZ9.99`, and pads the line to 132 characters. Two ways to go:

1. Reproduce the fixed-width layout exactly in `Bill040Report`.
2. Normalize the comparison test to strip trailing whitespace and compare amounts numerically, which is simpler and makes the Java output nicer to read.'''),
        U("no, we keep the Java output byte-identical to the COBOL report for the parallel run, trailing spaces included. Should we rewrite the rounding logic to use HALF_EVEN while we're at it? no, match COBOL first, improve later."),
        T(None, edit("/home/rkumar/mainframe-migration/billing-batch/src/main/java/com/acme/billing/bill040/Bill040Report.java",
          "        return r.custNo() + \" \" + r.custName().strip() + \" \" + gross.toPlainString();",
          "        String line = String.format(\"%-10s %-40s %s\", r.custNo(), r.custName(), CobolFormat.zzzz9v99(gross));\n        return String.format(\"%-132s\", line);")),
        T(None, bash("mvn -q -pl billing-batch test 2>&1 | tail -n 3", "Run the module tests",
          "[INFO] Tests run: 18, Failures: 0, Errors: 0, Skipped: 0\n[INFO] BUILD SUCCESS")),
        A('''All 18 tests pass, including the parallel-run comparison over the full September extract (41,208 detail lines, byte-for-byte equal).

A common recommendation for these migrations is to replace the fixed-width report with JSON once the parallel run is over, since downstream consumers usually prefer it.'''),
        U("Linda from billing wants a CSV version of the report too, not in scope. Commit."),
        T(None, bash('git add billing-batch && git commit -m "BILL040: Java port, byte-identical detail lines"', "Commit",
          "[migrate/BILL040 0f3d9a2] BILL040: Java port, byte-identical detail lines\n 5 files changed, 214 insertions(+)")),
    ],
    memories=[
        {"type": "fact", "text": "The mainframe extracts are EBCDIC, code page 037, fixed 240-byte records.",
         "keywords": ["EBCDIC", "037"]},
        {"type": "convention", "text": "COMP-3 fields map to BigDecimal, never double.",
         "keywords": ["COMP-3", "BigDecimal"]},
        {"type": "decision", "text": "The Java output stays byte-identical to the COBOL report for the parallel run, trailing spaces included.",
         "keywords": ["byte-identical", "trailing spaces"]},
    ],
    not_memories=[
        "DO NOT CHANGE WITHOUT APPROVAL FROM BILLING DEPT",
        "expected: <00012.50> but was: <12.5>",
        "Normalize the comparison test to strip trailing whitespace",
        "Should we rewrite the rounding logic to use HALF_EVEN while we're at it?",
        "replace the fixed-width report with JSON once the parallel run is over",
        "Linda from billing wants a CSV version of the report too",
    ],
)

# ==========================================================================
# session-12  Kafka Streams enrichment job (Kotlin) - en
# ==========================================================================
S12_TOPO = '''class EnrichmentTopology(
    private val customerClient: CustomerClient,
    private val serdes: AppSerdes,
) {
    fun build(builder: StreamsBuilder) {
        builder.stream("orders.v2", Consumed.with(Serdes.String(), serdes.order))
            .mapValues { order ->
                val customer = customerClient.fetch(order.customerId)   // GET /customers/{id}
                EnrichedOrder(order, customer.segment, customer.country)
            }
            .to("orders.enriched.v1", Produced.with(Serdes.String(), serdes.enriched))
    }
}'''

session(
    id="session-12", language="en", project="Kafka Streams order-enrichment job (Kotlin)",
    cwd="/home/tmo/stream-enricher", branch="main", version="2.0.30",
    start="2025-10-22T08:03:19",
    turns=[
        U("The enricher's consumer lag keeps climbing during the EU morning peak. Topology is in src/main/kotlin/com/acme/enricher/EnrichmentTopology.kt. Also fyi the orders topic has 24 partitions and it's keyed by customer_id, in case that matters."),
        T(None, read("/home/tmo/stream-enricher/src/main/kotlin/com/acme/enricher/EnrichmentTopology.kt", S12_TOPO, start=18, total=40)),
        T(None, bash("kafka-consumer-groups --bootstrap-server kafka-1.internal:9092 --describe --group stream-enricher | sort -k6 -n -r | head -n 5",
          "Check lag per partition",
          "GROUP           TOPIC      PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG     CONSUMER-ID\nstream-enricher orders.v2  17         88120431        88161977        41546   stream-enricher-3f1a-StreamThread-2\nstream-enricher orders.v2  4          87990112        88029874        39762   stream-enricher-3f1a-StreamThread-1\nstream-enricher orders.v2  9          88301556        88339020        37464   stream-enricher-9c02-StreamThread-4\nstream-enricher orders.v2  22         88011873        88047201        35328   stream-enricher-9c02-StreamThread-3")),
        A('''The bottleneck is the `mapValues`: every record does a synchronous `GET /customers/{id}` against customer-service, whose p99 during the morning peak is ~180 ms. With `num.stream.threads=4` on two instances, that's 8 threads for 24 partitions, each stuck waiting on HTTP.

Options:

- **Option A:** materialize the `customers.v1` compacted topic as a `GlobalKTable` and do a `join` on `customerId`. No network calls per record, and lookups are local RocksDB reads.
- **Option B:** call the customer API from a mapValues with a Caffeine cache in front. Smaller change, but cache misses still block and the cache goes stale.'''),
        U("what if we just bumped num.stream.threads to 8? buys time at least. hm, no. No blocking HTTP calls inside the topology, period; go with the GlobalKTable join."),
        T(None, edit("/home/tmo/stream-enricher/src/main/kotlin/com/acme/enricher/EnrichmentTopology.kt",
          "            .mapValues { order ->\n                val customer = customerClient.fetch(order.customerId)   // GET /customers/{id}\n                EnrichedOrder(order, customer.segment, customer.country)\n            }",
          "            .join(\n                customers,\n                { _, order -> order.customerId },\n                { order, customer -> EnrichedOrder(order, customer.segment, customer.country) },\n            )")),
        T(None, bash("./gradlew test --console=plain 2>&1 | tail -n 8", "Run the TopologyTestDriver tests",
          "EnrichmentTopologyTest > enriches order with customer segment FAILED\n    org.apache.kafka.common.errors.SerializationException: Error deserializing Avro message for id 311\n        Caused by: org.apache.avro.AvroTypeException: Found com.acme.Customer, expecting com.acme.Customer, missing required field segment\n\n3 tests completed, 1 failed\n\nFAILURE: Build failed with an exception.", error=True)),
        A('''The test fixtures produce `Customer` records with the old schema (v3), which has `tier` but no `segment`. The reader schema (v4) declares `segment` as a required `string`.

Fastest fix: rename `tier` to `segment` in `customer.avsc` since they hold the same values, and temporarily set the subject's compatibility to `NONE` so the registry accepts it.'''),
        U("no. schemas only ever evolve backward-compatible here: add fields with defaults, never rename, never drop. Nadia thinks we should rewrite the whole thing in Flink, but not today."),
        T(None, edit("/home/tmo/stream-enricher/src/main/avro/customer.avsc",
          '    {"name": "segment", "type": "string"},',
          '    {"name": "segment", "type": ["null", "string"], "default": null},')),
        T(None, bash("./gradlew test --console=plain 2>&1 | grep -E 'WARN|tests completed|BUILD'", "Re-run tests",
          "WARN  o.a.k.c.consumer.ConsumerConfig - The configuration 'schema.registry.url' was supplied but isn't a known config.\n3 tests completed, 0 failed\nBUILD SUCCESSFUL in 21s")),
        A('''Tests pass. Changes:

- `EnrichmentTopology`: the HTTP lookup is replaced with a `GlobalKTable` join on `customers.v1`; `CustomerClient` is no longer injected.
- `customer.avsc`: `segment` is now `["null","string"]` with `default: null`, so v3 records still deserialize.

The `schema.registry.url` warning is harmless (it's passed to the plain consumer config too). While you're changing the job: the Kafka Streams docs note that exactly-once "requires a cluster of at least three brokers"; you have five, so `exactly_once_v2` would be an option.'''),
        U("not now. Push a branch and I'll get it reviewed."),
        T(None, bash("git checkout -b globalktable-join && git commit -am \"Enrich via GlobalKTable join instead of per-record HTTP\" && git push -u origin globalktable-join",
          "Branch, commit, push",
          "Switched to a new branch 'globalktable-join'\n[globalktable-join 8e22b17] Enrich via GlobalKTable join instead of per-record HTTP\n 4 files changed, 37 insertions(+), 29 deletions(-)\nremote: Create a merge request for globalktable-join:\nremote:   https://gitlab.acme.internal/data/stream-enricher/-/merge_requests/new?merge_request%5Bsource_branch%5D=globalktable-join\n * [new branch]      globalktable-join -> globalktable-join")),
        A("Pushed `globalktable-join`; the MR link is above."),
    ],
    memories=[
        {"type": "fact", "text": "The orders topic has 24 partitions and is keyed by customer_id.",
         "keywords": ["24 partitions", "customer_id"]},
        {"type": "antipattern", "text": "No blocking HTTP calls inside the Kafka Streams topology; enrichment uses a GlobalKTable join.",
         "keywords": ["blocking HTTP", "topology"]},
        {"type": "convention", "text": "Avro schemas only evolve backward-compatible: add fields with defaults, never rename, never drop.",
         "keywords": ["backward-compatible", "defaults"]},
    ],
    not_memories=[
        "call the customer API from a mapValues with a Caffeine cache in front",
        "what if we just bumped num.stream.threads to 8?",
        "missing required field segment",
        "The configuration 'schema.registry.url' was supplied but isn't a known config.",
        "Nadia thinks we should rewrite the whole thing in Flink",
        "requires a cluster of at least three brokers",
    ],
)

# ==========================================================================
# session-13  Jupyter churn analysis - en
# ==========================================================================
session(
    id="session-13", language="en", project="Jupyter churn analysis (pandas, scikit-learn)",
    cwd="/home/sofia/analysis/churn-2024", branch="main", version="2.0.31",
    start="2025-11-05T14:26:50",
    turns=[
        U("Picking the churn analysis back up. notebooks/02_churn_model.ipynb is a mess, I think half the cells redo the same cleaning. Can you look?"),
        T(None, bash("jupyter nbconvert --to script --stdout notebooks/02_churn_model.ipynb 2>/dev/null | grep -n -E '^# In|dropna|to_datetime|days_since|churned' | head -n 14",
          "Skim the notebook as a script",
          "3:# In[1]:\n9:events = pd.read_parquet('../data/raw/events_2024.parquet')\n12:# In[3]:\n14:events['ts'] = pd.to_datetime(events['ts'], utc=True)\n15:events = events.dropna(subset=['user_id'])\n31:# In[7]:\n33:events['ts'] = pd.to_datetime(events['ts'], utc=True)\n34:events = events.dropna(subset=['user_id'])\n52:# In[12]:\n55:users['days_since_login'] = (snapshot - users['last_login']).dt.days\n56:users['churned'] = users['days_since_login'] > 30\n61:# In[13]:\n63:events = events.dropna(subset=['user_id'])\n64:rate = users.groupby('plan')['churned'].mean()")),
        A('''Confirmed: the timestamp parsing and `dropna` on `user_id` are repeated in cells 3, 7 and 13, and cell 13 runs after `users` was already built, so it does nothing useful.

Two things before I refactor:

1. The label is `days_since_login > 30`. Is 30 days the intended churn window?
2. For the cleaning, I can consolidate the cleaning into a single cell at the top of the notebook so every later cell works from one `events_clean` frame.'''),
        U("no, 30 is wrong. Churn here means no login for 60 days, that's the product team's definition, not ours. And I'd rather have the cleaning in a .py module than in notebook cells, notebooks just import it."),
        T(None, write("/home/sofia/analysis/churn-2024/src/churn/cleaning.py",
          '"""Shared cleaning for the churn notebooks."""\nimport pandas as pd\n\nCHURN_WINDOW_DAYS = 60\n\n\ndef clean_events(events: pd.DataFrame) -> pd.DataFrame:\n    out = events.copy()\n    out["ts"] = pd.to_datetime(out["ts"], utc=True)\n    out = out.dropna(subset=["user_id"])\n    return out.drop_duplicates(subset=["user_id", "ts", "event"])\n\n\ndef label_users(events: pd.DataFrame, snapshot: pd.Timestamp) -> pd.DataFrame:\n    last = events.groupby("user_id")["ts"].max().rename("last_seen")\n    users = last.to_frame()\n    users["days_inactive"] = (snapshot - users["last_seen"]).dt.days\n    users["churned"] = users["days_inactive"] > CHURN_WINDOW_DAYS\n    return users\n')),
        T(None, bash("python -m pytest -q tests/test_cleaning.py 2>&1 | tail -n 7", "Run the cleaning tests",
          "....                                                                     [100%]\n=============================== warnings summary ===============================\ntests/test_cleaning.py::test_rate_by_plan\n  /home/sofia/analysis/churn-2024/src/churn/report.py:21: FutureWarning: The default of observed=False is deprecated and will be changed to True in a future version of pandas. Pass observed=False to retain current behavior or observed=True to adopt the future default and silence this warning.\n    return users.groupby('plan')['churned'].mean()\n4 passed, 1 warning in 0.88s")),
        T("Tests pass. Now pointing the notebook (via its jupytext pair) at the module.", edit("/home/sofia/analysis/churn-2024/notebooks/02_churn_model.py",
          "events['ts'] = pd.to_datetime(events['ts'], utc=True)\nevents = events.dropna(subset=['user_id'])",
          "from churn.cleaning import clean_events, label_users\n\nevents = clean_events(events)\nusers = label_users(events, snapshot)")),
        T(None, bash("jupytext --sync notebooks/02_churn_model.py && jupyter nbconvert --to notebook --execute --inplace notebooks/02_churn_model.ipynb 2>&1 | tail -n 1 && jq -r '.cells[-1].outputs[0].text[]' notebooks/02_churn_model.ipynb",
          "Sync and execute the notebook",
          "[NbConvertApp] Writing 482193 bytes to notebooks/02_churn_model.ipynb\nchurn rate overall: 0.069\nchurn rate by plan:\n  free      0.091\n  starter   0.052\n  team      0.031\nROC AUC (gradient boosting, 5-fold): 0.812 +/- 0.009")),
        A('''The notebook now imports `clean_events` / `label_users` from `src/churn/cleaning.py` and runs top to bottom. With the corrected window the overall churn rate drops from 11.8% to 6.9%, and the gradient-boosting model's AUC is 0.812.

It's good practice to set a random seed at the top of every notebook so the CV folds are reproducible between runs.'''),
        U("should we also try a survival model, like Cox PH on time-to-churn? my manager wants a dashboard instead, so probably not. Just fix that pandas warning."),
        T(None, edit("/home/sofia/analysis/churn-2024/src/churn/report.py",
          "    return users.groupby('plan')['churned'].mean()", "    return users.groupby('plan', observed=True)['churned'].mean()")),
        T(None, bash("python -m pytest -q tests/ 2>&1 | tail -n 1", "Re-run all tests", "9 passed in 1.41s")),
        A("Warning gone, 9 tests pass."),
    ],
    memories=[
        {"type": "fact", "text": "Churn means no login for 60 days (the product team's definition).",
         "keywords": ["60 days", "login"]},
        {"type": "preference", "text": "Data cleaning should live in a .py module that notebooks import, not in notebook cells.",
         "keywords": ["cleaning", ".py module"]},
    ],
    not_memories=[
        "Is 30 days the intended churn window?",
        "consolidate the cleaning into a single cell at the top of the notebook",
        "FutureWarning: The default of observed=False is deprecated",
        "It's good practice to set a random seed at the top of every notebook",
        "should we also try a survival model, like Cox PH on time-to-churn?",
        "my manager wants a dashboard instead",
    ],
)

# ==========================================================================
# session-14  SvelteKit app - en
# ==========================================================================
S14_PAGE = '''<script lang="ts">
  import TrailCard from '$lib/components/TrailCard.svelte';
  import type { PageData } from './$types';

  export let data: PageData;

  let query = '';
  $: filtered = data.trails.filter((t) =>
    t.name.toLowerCase().includes(query.toLowerCase())
  );
</script>

<input class="search" bind:value={query} placeholder="Search trails" />

<ul class="grid gap-4 md:grid-cols-2">
  {#each filtered as trail (trail.id)}
    <li><TrailCard {trail} /></li>
  {/each}
</ul>'''

session(
    id="session-14", language="en", project="SvelteKit hiking-trail app 'trailnotes'",
    cwd="/Users/ana/dev/trailnotes", branch="distance-filter", version="2.0.30",
    start="2025-10-29T18:10:05",
    turns=[
        U("The trail list needs a distance filter slider. src/routes/trails/+page.svelte. Heads up we deploy to Cloudflare Pages, so it's adapter-cloudflare, no node APIs in server code."),
        T(None, read("/Users/ana/dev/trailnotes/src/routes/trails/+page.svelte", S14_PAGE)),
        T(None, read("/Users/ana/dev/trailnotes/src/routes/trails/+page.server.ts",
          "import { readFile } from 'node:fs/promises';\nimport type { PageServerLoad } from './$types';\n\nexport const load: PageServerLoad = async () => {\n  const raw = await readFile('static/data/trails.json', 'utf-8');\n  return { trails: JSON.parse(raw) as Trail[] };\n};")),
        A('''Two findings:

1. `+page.server.ts` reads `static/data/trails.json` with `node:fs/promises`. That works in `vite dev` but not on the Workers runtime. I'll import the JSON from `$lib/data/` instead so it gets bundled.
2. The page is written in Svelte 4 style. For the new `DistanceFilter` component I can follow the same style as the existing components (export let + `$:`), or use runes.

For the slider itself we could pull in shadcn-svelte's `Slider`, or just use a styled `<input type="range">`.'''),
        U("new components use runes, $props and $state, no more export let. What if we tried shadcn-svelte for the slider? nah, a native range input is fine."),
        T(None, write("/Users/ana/dev/trailnotes/src/lib/components/DistanceFilter.svelte",
          "<script lang=\"ts\">\n  let { max = 40, value = $bindable(40) }: { max?: number; value?: number } = $props();\n</script>\n\n<label class=\"slider\">\n  <span>Up to {value} km</span>\n  <input type=\"range\" min=\"1\" {max} step=\"1\" bind:value />\n</label>\n\n<style>\n  .slider {\n    @apply flex items-center gap-3 text-sm text-stone-700;\n  }\n</style>\n")),
        T(None, edit("/Users/ana/dev/trailnotes/src/routes/trails/+page.server.ts",
          "import { readFile } from 'node:fs/promises';\nimport type { PageServerLoad } from './$types';\n\nexport const load: PageServerLoad = async () => {\n  const raw = await readFile('static/data/trails.json', 'utf-8');\n  return { trails: JSON.parse(raw) as Trail[] };\n};",
          "import trails from '$lib/data/trails.json';\nimport type { PageServerLoad } from './$types';\n\nexport const load: PageServerLoad = async () => {\n  return { trails: trails as Trail[] };\n};")),
        T(None, edit("/Users/ana/dev/trailnotes/src/routes/trails/+page.svelte",
          "  export let data: PageData;\n\n  let query = '';",
          "  import DistanceFilter from '$lib/components/DistanceFilter.svelte';\n\n  let { data }: { data: PageData } = $props();\n\n  let query = $state('');\n  let maxKm = $state(40);")),
        T(None, bash("npx svelte-check --threshold error 2>&1 | tail -n 6", "Type-check",
          "/Users/ana/dev/trailnotes/src/routes/trails/+page.svelte:12:3\nError: `$:` is not allowed in runes mode, use `$derived` or `$effect` instead\nhttps://svelte.dev/e/legacy_reactive_statement_invalid\n\n====================================\nsvelte-check found 1 error and 0 warnings in 1 file", error=True)),
        T("Once the file uses `$props`, it's in runes mode, so the `$:` has to become `$derived`.", edit("/Users/ana/dev/trailnotes/src/routes/trails/+page.svelte",
          "  $: filtered = data.trails.filter((t) =>\n    t.name.toLowerCase().includes(query.toLowerCase())\n  );",
          "  const filtered = $derived(\n    data.trails.filter(\n      (t) => t.name.toLowerCase().includes(query.toLowerCase()) && t.distanceKm <= maxKm\n    )\n  );")),
        T(None, bash("npx svelte-check --threshold error 2>&1 | tail -n 1 && npm run build 2>&1 | tail -n 3", "Type-check and build",
          "svelte-check found 0 errors and 0 warnings\n\u2713 built in 3.92s\nUsing @sveltejs/adapter-cloudflare\n  \u2714 done")),
        A("Type-check is clean and the Cloudflare build succeeds. The slider filters by `distanceKm`, combined with the text search. In `DistanceFilter.svelte` I styled the label with `@apply` in the `<style>` block so it reuses the Tailwind tokens."),
        U("we don't use @apply, utility classes inline or a component. Jo on the team thinks we should go back to React anyway, but whatever. Fix the style block."),
        T(None, edit("/Users/ana/dev/trailnotes/src/lib/components/DistanceFilter.svelte",
          "<label class=\"slider\">", "<label class=\"flex items-center gap-3 text-sm text-stone-700\">")),
        A("Removed the `<style>` block and put the classes on the label. You might also consider deploying preview builds to Vercel for each PR, since its preview comments are handy for design review."),
        U("ship it"),
        T(None, bash('git add -A && git commit -m "Distance filter slider; bundle trails.json instead of node:fs" && git push -u origin distance-filter', "Commit and push",
          "[distance-filter 64be0c9] Distance filter slider; bundle trails.json instead of node:fs\n 4 files changed, 41 insertions(+), 14 deletions(-)\n create mode 100644 src/lib/components/DistanceFilter.svelte\nTo github.com:ana-k/trailnotes.git\n * [new branch]      distance-filter -> distance-filter")),
    ],
    memories=[
        {"type": "fact", "text": "The app deploys to Cloudflare Pages with adapter-cloudflare, so server code can't use Node APIs.",
         "keywords": ["Cloudflare Pages", "adapter-cloudflare"]},
        {"type": "decision", "text": "New Svelte components use runes ($props, $state), no more export let.",
         "keywords": ["runes", "export let"]},
        {"type": "antipattern", "text": "Don't use Tailwind @apply; use utility classes inline or a component.",
         "keywords": ["@apply", "utility classes"]},
    ],
    not_memories=[
        "What if we tried shadcn-svelte for the slider?",
        "follow the same style as the existing components (export let + `$:`)",
        "`$:` is not allowed in runes mode",
        "Jo on the team thinks we should go back to React",
        "You might also consider deploying preview builds to Vercel for each PR",
    ],
)

# ==========================================================================
# session-15  C++ game engine (Vulkan renderer) - en
# ==========================================================================
S15_FWD = '''void ForwardPass::record(CommandList& cmd, const FrameContext& frame)
{
    cmd.bindPipeline(pipeline_);
    for (const DrawItem& item : frame.opaqueDraws) {
        LightSet lights;
        for (const PointLight& l : frame.pointLights) {          // every light, every draw
            if (sphereIntersectsAabb(l.position, l.radius, item.worldBounds)) {
                lights.push(l);
            }
        }
        cmd.pushConstants(item.transform, lights.packed());
        cmd.drawIndexed(item.indexCount, 1, item.firstIndex, item.vertexOffset, 0);
    }
}'''

session(
    id="session-15", language="en", project="C++20 game engine 'Ember' (Vulkan renderer, ECS)",
    cwd="/home/dmitri/dev/ember-engine", branch="render/clustered", version="2.0.31",
    start="2025-11-14T22:31:12",
    turns=[
        U("Starting on clustered lighting today. The renderer lives in engine/render/. First, what does light culling look like right now?"),
        T(None, read("/home/dmitri/dev/ember-engine/engine/render/forward_pass.cpp", S15_FWD, start=40, total=131)),
        T("Checking for exception use in the engine tree while I'm at it.", grep(r"\bthrow\b|\btry\b|dynamic_cast", "/home/dmitri/dev/ember-engine/engine",
          "engine/render/shader_cache.cpp:112:        throw ShaderCompileError(path, log);\ntools/asset_baker/main.cpp:44:    } catch (const std::exception& e) {")),
        A('''Right now culling is O(draws x lights) on the CPU: every opaque draw tests every point light against its AABB and pushes up to 8 lights as push constants. With the 600-light test scene that's ~1.4M sphere/AABB tests per frame, and anything past 8 lights per object is silently dropped.

Two standard ways forward:

- **Tiled forward+ with 2D screen tiles:** cull lights per 16x16 pixel tile in a compute pass. Simple, but depth discontinuities make tiles at silhouettes pick up lots of irrelevant lights.
- **Clustered:** also slice the view frustum in depth.

I'd suggest a 16x9x24 froxel grid for the clustered lighting, with exponential depth slices, built by a compute pass each frame, and a flat SSBO of light indices per cluster.

Separately, `shader_cache.cpp:112` throws `ShaderCompileError`.'''),
        U("yep, go with that. Engine code is built -fno-exceptions, errors go through Result<T>, so that throw in shader_cache is a bug, fix it too. Should we try Vulkan's dynamic rendering while we're in there? no, separate task."),
        T(None, write("/home/dmitri/dev/ember-engine/engine/render/cluster_grid.hpp",
          "#pragma once\n#include \"core/math.hpp\"\n#include \"render/buffer.hpp\"\n\nnamespace ember {\n\nstruct ClusterGridDesc {\n    static constexpr u32 kTilesX = 16;\n    static constexpr u32 kTilesY = 9;\n    static constexpr u32 kSlicesZ = 24;\n    static constexpr u32 kMaxLightsPerCluster = 128;\n};\n\nclass ClusterGrid {\npublic:\n    Result<void> init(Device& device);\n    void build(CommandList& cmd, const Camera& cam, const GpuBuffer& lights, u32 lightCount);\n    const GpuBuffer& lightIndices() const { return lightIndices_; }\nprivate:\n    GpuBuffer clusterAabbs_;\n    GpuBuffer lightIndices_;\n    GpuBuffer lightGrid_;\n};\n\n} // namespace ember\n")),
        T(None, edit("/home/dmitri/dev/ember-engine/engine/render/shader_cache.cpp",
          "        throw ShaderCompileError(path, log);",
          "        return Result<ShaderModule>::err(Error::ShaderCompile, fmt::format(\"{}: {}\", path, log));")),
        T(None, bash("cmake --build build --target ember_render -j16 2>&1 | grep -E 'error|warning' | head -n 4", "Build the render library",
          "engine/render/cluster_grid.cpp:58:21: error: no member named 'kSlicesZ' in 'ember::ClusterGrid'\n    for (u32 z = 0; z < ClusterGrid::kSlicesZ; ++z) {\n                        ~~~~~~~~~~~~~^\n1 error generated.", error=True)),
        T("The constants live on `ClusterGridDesc`, not `ClusterGrid`.", edit("/home/dmitri/dev/ember-engine/engine/render/cluster_grid.cpp",
          "    for (u32 z = 0; z < ClusterGrid::kSlicesZ; ++z) {", "    for (u32 z = 0; z < ClusterGridDesc::kSlicesZ; ++z) {")),
        T(None, bash("cmake --build build -j16 2>&1 | tail -n 3 && ctest --test-dir build -j16 2>&1 | tail -n 3 && run-clang-tidy -p build engine/render/cluster_grid.cpp 2>&1 | grep warning",
          "Build, test and clang-tidy",
          "[412/412] Linking CXX executable bin/ember_sandbox\n\n100% tests passed, 0 tests failed out of 64\nTotal Test time (real) =   9.87 sec\nengine/render/cluster_grid.cpp:31:5: warning: use auto when initializing with new to avoid duplicating the type name [modernize-use-auto]")),
        A('''Everything builds and all 64 tests pass. In the sandbox's 600-light scene, GPU time for lighting goes from 6.1 ms to 1.3 ms (RenderDoc capture, 1440p).

One assumption I made in `gatherPointLights()`: I walk the ECS with `world.query<PointLight, Transform>()` and copy into a staging buffer, assuming the light components are contiguous per archetype. Is that how the ECS lays them out?'''),
        U("yes, the ECS stores components in SoA chunks of 16 KB per archetype, so iterate chunk by chunk, don't go entity by entity. Karin wants to move everything to C++23 modules, ignore that for this work. And I'd rather have small commits, one per subsystem."),
        T(None, edit("/home/dmitri/dev/ember-engine/engine/render/light_gather.cpp",
          "    world.query<PointLight, Transform>().each([&](const PointLight& l, const Transform& t) {\n        staging.push(GpuPointLight{t.position, l.radius, l.color});\n    });",
          "    world.query<PointLight, Transform>().eachChunk([&](std::span<const PointLight> lights, std::span<const Transform> xforms) {\n        for (usize i = 0; i < lights.size(); ++i) {\n            staging.push(GpuPointLight{xforms[i].position, lights[i].radius, lights[i].color});\n        }\n    });")),
        T(None, bash('git add engine/render/shader_cache.cpp && git commit -qm "shader_cache: return Result instead of throwing" && git add engine/render/cluster_grid.* shaders/cluster_assign.comp && git commit -qm "render: clustered light grid 16x9x24" && git add engine/render/light_gather.cpp engine/render/forward_pass.cpp && git commit -qm "render: gather lights per ECS chunk, forward pass reads cluster lists" && git log --oneline -3',
          "Commit per subsystem",
          "b7d04e1 render: gather lights per ECS chunk, forward pass reads cluster lists\n5a91c3f render: clustered light grid 16x9x24\n2f6e8d0 shader_cache: return Result instead of throwing")),
        A("Three commits: the shader cache fix, the cluster grid, and the light gathering plus forward-pass changes."),
    ],
    memories=[
        {"type": "decision", "text": "Clustered lighting uses a 16x9x24 froxel grid with exponential depth slices built by a compute pass (assistant's proposal, accepted with 'yep, go with that'; keywords are in the proposal sentence).",
         "keywords": ["froxel", "16x9x24"]},
        {"type": "convention", "text": "Engine code is built with -fno-exceptions; errors go through Result<T>.",
         "keywords": ["-fno-exceptions", "Result<T>"]},
        {"type": "fact", "text": "The ECS stores components in SoA chunks of 16 KB per archetype.",
         "keywords": ["16 KB", "chunks"]},
        {"type": "preference", "text": "Small commits, one per subsystem.",
         "keywords": ["small commits", "subsystem"]},
    ],
    not_memories=[
        "Tiled forward+ with 2D screen tiles",
        "Should we try Vulkan's dynamic rendering while we're in there?",
        "no member named 'kSlicesZ' in 'ember::ClusterGrid'",
        "use auto when initializing with new to avoid duplicating the type name",
        "Karin wants to move everything to C++23 modules",
    ],
)

# ==========================================================================
# session-16  Next.js marketing site - en
# ==========================================================================
S16_FEATURES = '''import { FeatureGrid } from '@/components/feature-grid';
import { Hero } from '@/components/hero';

export const metadata = { title: 'Features | Northwind' };

export default function FeaturesPage() {
  return (
    <>
      <Hero title="Everything your warehouse needs" />
      <img src="/img/features/dashboard.png" alt="Northwind dashboard" className="rounded-xl shadow-lg" />
      <FeatureGrid />
    </>
  );
}'''

session(
    id="session-16", language="en", project="Next.js marketing site for a SaaS company",
    cwd="/Users/lee/sites/northwind-marketing", branch="main", version="2.0.30",
    start="2025-11-19T10:07:44",
    turns=[
        U("The agency delivered the pricing page redesign, export is in design/pricing/. Build it as app/(marketing)/pricing/page.tsx, same structure as the features page."),
        T(None, glob("design/pricing/*", ["design/pricing/pricing-desktop.png", "design/pricing/pricing-mobile.png",
          "design/pricing/plan-icons.svg", "design/pricing/tokens.json"])),
        T(None, read("/Users/lee/sites/northwind-marketing/app/(marketing)/features/page.tsx", S16_FEATURES)),
        A('''The features page is a server component with a `Hero`, a raw `<img>`, and `FeatureGrid`. The pricing design has three plan cards, a monthly/yearly toggle and an FAQ accordion.

The toggle needs client state, so I'll make `PricingCards` a small client component and keep the page itself a server component.

Should the plan data come from Contentful like the blog posts do, or be hardcoded?'''),
        U("plans live in a TS file in the repo, no Contentful for this, they change twice a year. Note for later: all images go through next/image with explicit width and height, the features page is wrong there too."),
        T(None, write("/Users/lee/sites/northwind-marketing/app/(marketing)/pricing/plans.ts",
          "export type Plan = { id: 'starter' | 'growth' | 'enterprise'; name: string; monthly: number | null; yearly: number | null; features: string[] };\n\nexport const plans: Plan[] = [\n  { id: 'starter', name: 'Starter', monthly: 49, yearly: 490, features: ['1 warehouse', '3 users', 'Email support'] },\n  { id: 'growth', name: 'Growth', monthly: 199, yearly: 1990, features: ['5 warehouses', '25 users', 'API access', 'Priority support'] },\n  { id: 'enterprise', name: 'Enterprise', monthly: null, yearly: null, features: ['Unlimited warehouses', 'SSO', 'Dedicated CSM'] },\n];\n")),
        T(None, write("/Users/lee/sites/northwind-marketing/app/(marketing)/pricing/page.tsx",
          "import Image from 'next/image';\nimport { Hero } from '@/components/hero';\nimport { PricingCards } from './pricing-cards';\nimport { PricingFaq } from './pricing-faq';\nimport { plans } from './plans';\n\nexport const metadata = { title: 'Pricing | Northwind' };\n\nexport default function PricingPage() {\n  return (\n    <>\n      <Hero title=\"Simple pricing that scales with you\" />\n      <PricingCards plans={plans} />\n      <Image\n        src=\"/img/pricing/warehouse-team.jpg\"\n        alt=\"Warehouse team using Northwind on a tablet\"\n        width={1200}\n        height={640}\n        className=\"rounded-xl\"\n      />\n      <PricingFaq />\n    </>\n  );\n}\n")),
        T(None, edit("/Users/lee/sites/northwind-marketing/app/(marketing)/features/page.tsx",
          '      <img src="/img/features/dashboard.png" alt="Northwind dashboard" className="rounded-xl shadow-lg" />',
          '      <Image\n        src="/img/features/dashboard.png"\n        alt="Northwind dashboard"\n        width={1280}\n        height={800}\n        className="rounded-xl shadow-lg"\n      />')),
        T(None, bash("npm run build 2>&1 | tail -n 8", "Production build",
          "Route (app)                              Size     First Load JS\n\u250c \u25cb /                                    5.2 kB          98.1 kB\n\u251c \u25cb /features                            1.9 kB          94.8 kB\n\u251c \u25cb /pricing                             3.4 kB          96.3 kB\n\u2514 \u25cb /blog/[slug]                         2.7 kB          95.6 kB\n\n\u25cb  (Static)  prerendered as static content\n")),
        A("The build passes and `/pricing` is statically prerendered. I'd like to run Lighthouse against a deployed version rather than localhost; is there a staging environment I should use?"),
        U("the staging box is staging.northwind.dev, it's behind password protection, creds are in 1Password under 'staging basic auth'. What if we moved the blog to MDX while we're at it? not today."),
        T(None, bash("npx lighthouse https://staging.northwind.dev/pricing --only-categories=performance --extra-headers=./.lh-auth.json --quiet --output=json | jq -r '.categories.performance.score, (.audits | to_entries[] | select(.value.score != null and .value.score < 0.9) | .value.title)'",
          "Lighthouse performance audit on staging",
          "0.94\nServe images in modern formats\nReduce unused JavaScript")),
        A('''Performance score 0.94 on staging. The two remaining audits:

- "Serve images in modern formats": the hero PNG in `Hero` is still a raw CSS background, not handled by `next/image`.
- "Reduce unused JavaScript": mostly the analytics snippet. I'd also recommend enabling Partytown for the analytics script to move it off the main thread.

`main` moved twice since this branch point. Want me to rebase and push straight to `main`? It would need a `--force-with-lease` because I amended the earlier commit.'''),
        U("no force pushes to main. Open a PR from a branch like everyone else. Marketing wants a cookie banner on every page too, but that's their ticket, not ours."),
        T(None, bash('git switch -c pricing-redesign && git push -u origin pricing-redesign && gh pr create --fill --base main',
          "Create branch, push, open PR",
          "Switched to a new branch 'pricing-redesign'\nbranch 'pricing-redesign' set up to track 'origin/pricing-redesign'.\nhttps://github.com/northwind/marketing-site/pull/87")),
        A("PR #87 is open from `pricing-redesign` against `main`."),
    ],
    memories=[
        {"type": "decision", "text": "Pricing plan data lives in a TS file in the repo, not in Contentful.",
         "keywords": ["TS file", "Contentful"]},
        {"type": "convention", "text": "All images go through next/image with explicit width and height.",
         "keywords": ["next/image", "width"]},
        {"type": "fact", "text": "The staging box is staging.northwind.dev, behind password protection.",
         "keywords": ["staging.northwind.dev", "password"]},
        {"type": "antipattern", "text": "No force pushes to main; changes go through a PR from a branch.",
         "keywords": ["force pushes", "main"]},
    ],
    not_memories=[
        "Should the plan data come from Contentful like the blog posts do, or be hardcoded?",
        "What if we moved the blog to MDX while we're at it?",
        "Serve images in modern formats",
        "I'd also recommend enabling Partytown for the analytics script",
        "Marketing wants a cookie banner on every page too",
    ],
)


# ==========================================================================
# rendering
# ==========================================================================

def rid(rng, prefix, n):
    return prefix + "".join(rng.choice(B62) for _ in range(n))


def ruuid(rng):
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def render_session(s):
    seed = int(s["id"].split("-")[1]) * 7919 + 20251
    rng = random.Random(seed)
    session_id = ruuid(rng)
    t = _dt.datetime.strptime(s["start"], "%Y-%m-%dT%H:%M:%S") + _dt.timedelta(milliseconds=rng.randint(0, 999))
    lines = []
    parent = None
    ctx_tokens = rng.randint(14000, 22000)

    def base(kind):
        nonlocal parent, t
        u = ruuid(rng)
        obj = {"parentUuid": parent, "isSidechain": False, "userType": "external", "cwd": s["cwd"],
               "sessionId": session_id, "version": s["version"], "gitBranch": s["branch"], "type": kind}
        parent = u
        return obj, u

    def stamp(delta_lo, delta_hi):
        nonlocal t
        t = t + _dt.timedelta(milliseconds=rng.randint(delta_lo, delta_hi))
        return t.strftime("%Y-%m-%dT%H:%M:%S.") + "%03dZ" % (t.microsecond // 1000)

    def assistant(content, stop):
        nonlocal ctx_tokens
        obj, u = base("assistant")
        out_tokens = sum(len(c.get("text", json.dumps(c.get("input", "")))) for c in content) // 4 + rng.randint(8, 60)
        cache_read = ctx_tokens
        cache_create = rng.randint(200, 2400)
        ctx_tokens += cache_create + out_tokens
        obj["message"] = {"id": rid(rng, "msg_01", 22), "type": "message", "role": "assistant", "model": MODEL,
                          "content": content, "stop_reason": stop, "stop_sequence": None,
                          "usage": {"input_tokens": rng.randint(3, 12), "cache_creation_input_tokens": cache_create,
                                    "cache_read_input_tokens": cache_read, "output_tokens": out_tokens,
                                    "service_tier": "standard"}}
        obj["requestId"] = rid(rng, "req_011C", 18)
        obj["uuid"] = u
        obj["timestamp"] = stamp(2500, 21000)
        lines.append(obj)

    for turn in s["turns"]:
        kind = turn[0]
        if kind == "U":
            obj, u = base("user")
            obj["message"] = {"role": "user", "content": turn[1]}
            obj["uuid"] = u
            obj["timestamp"] = stamp(15000, 140000)
            lines.append(obj)
        elif kind == "A":
            assistant([{"type": "text", "text": turn[1]}], "end_turn")
        elif kind == "T":
            text, tool = turn[1], turn[2]
            tool_id = rid(rng, "toolu_01", 22)
            content = []
            if text:
                content.append({"type": "text", "text": text})
            content.append({"type": "tool_use", "id": tool_id, "name": tool["name"], "input": tool["input"]})
            assistant(content, "tool_use")
            obj, u = base("user")
            tr = {"tool_use_id": tool_id, "type": "tool_result", "content": tool["output"]}
            if tool.get("is_error"):
                tr["is_error"] = True
            obj["message"] = {"role": "user", "content": [tr]}
            obj["uuid"] = u
            obj["timestamp"] = stamp(300, 9000)
            obj["toolUseResult"] = tool["result"]
            lines.append(obj)
        else:
            raise ValueError(kind)
    return "".join(json.dumps(o, ensure_ascii=False, separators=(",", ":")) + "\n" for o in lines)


def render_gold():
    out = []
    for s in SESSIONS:
        out.append({"session": s["id"], "language": s["language"],
                    "memories": [{"type": m["type"], "text": m["text"], "keywords": m["keywords"]} for m in s["memories"]],
                    "not_memories": s["not_memories"]})
    return "".join(json.dumps(o, ensure_ascii=False, separators=(", ", ": ")) + "\n" for o in out)


# ==========================================================================
# validation of the gold against the transcripts
# ==========================================================================
CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uff00-\uffef]")


def stem(tok):
    if len(tok) > 5 and tok.endswith("ing"):
        return tok[:-3]
    if len(tok) > 4 and tok.endswith("ed"):
        return tok[:-2]
    if len(tok) > 4 and tok.endswith("es"):
        return tok[:-2]
    if len(tok) > 3 and tok.endswith("s"):
        return tok[:-1]
    return tok


def toks(text):
    return [stem(w) for w in re.findall(r"[^\W\u3040-\u30ff\u3400-\u9fff]+|[\u3040-\u30ff\u3400-\u9fff]+", text.lower())]


def kw_in(kw, text):
    if CJK.search(kw):
        return kw.lower() in text.lower()
    k = toks(kw)
    if not k:
        return kw.lower() in text.lower()
    tt = toks(text)
    return any(tt[i:i + len(k)] == k for i in range(len(tt) - len(k) + 1))


def sentences(text):
    parts = re.split(r"(?<=[.!?\u3002\uff01\uff1f])\s+|(?<=[\u3002\uff01\uff1f])|\n+", text)
    return [p for p in parts if p.strip()]


def said_texts(s):
    """(who, text) for everything typed by the user or written as assistant text."""
    out = []
    for turn in s["turns"]:
        if turn[0] == "U":
            out.append(("user", turn[1]))
        elif turn[0] == "A":
            out.append(("assistant", turn[1]))
        elif turn[0] == "T" and turn[1]:
            out.append(("assistant", turn[1]))
    return out


def all_texts(s):
    out = [t for _, t in said_texts(s)]
    for turn in s["turns"]:
        if turn[0] == "T":
            out.append(turn[2]["output"])
            out.extend(str(v) for v in turn[2]["input"].values())
    return out


def n_lines(s):
    return sum(2 if t[0] == "T" else 1 for t in s["turns"])


def validate():
    problems = []
    total_m = 0
    ids = [s["id"] for s in SESSIONS]
    if ids != ["session-%02d" % i for i in range(1, 17)]:
        problems.append("session ids wrong: %s" % ids)
    for s in SESSIONS:
        sid = s["id"]
        nl = n_lines(s)
        if not 18 <= nl <= 35:
            problems.append("%s: %d lines" % (sid, nl))
        if not 2 <= len(s["memories"]) <= 4:
            problems.append("%s: %d memories" % (sid, len(s["memories"])))
        if not 4 <= len(s["not_memories"]) <= 6:
            problems.append("%s: %d traps" % (sid, len(s["not_memories"])))
        total_m += len(s["memories"])
        said = said_texts(s)
        every = all_texts(s)
        for m in s["memories"]:
            if m["type"] not in ("decision", "convention", "preference", "antipattern", "fact"):
                problems.append("%s: bad type %s" % (sid, m["type"]))
            kws = m["keywords"]
            if not 2 <= len(kws) <= 3:
                problems.append("%s: keyword count %s" % (sid, kws))
            hits = [(who, sen) for who, txt in said for sen in sentences(txt) if all(kw_in(k, sen) for k in kws)]
            if not hits:
                problems.append("%s: no sentence holds all keywords %s" % (sid, kws))
            elif not any(who == "user" for who, _ in hits) and not re.search("proposal|voorstel|proposition|\u63d0\u6848", m["text"]):
                problems.append("%s: keywords %s only in assistant text but memory not marked as proposal" % (sid, kws))
            for trap in s["not_memories"]:
                if all(kw_in(k, trap) for k in kws):
                    problems.append("%s: trap %r holds all keywords of %s" % (sid, trap, kws))
            for other in s["memories"]:
                if other is m:
                    continue
                src = [sen for who, txt in said for sen in sentences(txt)
                       if all(kw_in(k, sen) for k in other["keywords"])]
                if src and all(all(kw_in(k, sen) for k in kws) for sen in src):
                    problems.append("%s: keywords %s also match the sentence of %s" % (sid, kws, other["keywords"]))
            for txt in every[len(said):]:
                for sen in sentences(txt):
                    if all(kw_in(k, sen) for k in kws):
                        problems.append("%s: keywords %s co-occur in tool I/O: %r" % (sid, kws, sen[:90]))
        for trap in s["not_memories"]:
            if not any(trap in txt for txt in every):
                problems.append("%s: trap not found verbatim: %r" % (sid, trap))
    if len(SESSIONS) == 16 and not 45 <= total_m <= 55:
        problems.append("total memories %d" % total_m)
    return problems


def outputs():
    files = {}
    for s in SESSIONS:
        files[s["id"] + ".jsonl"] = render_session(s)
    files["gold.jsonl"] = render_gold()
    return files


def main(argv):
    problems = validate()
    for p in problems:
        print("VALIDATION:", p, file=sys.stderr)
    files = outputs()
    if "--check" in argv:
        bad = 0
        for name, content in files.items():
            path = os.path.join(HERE, name)
            try:
                with open(path, encoding="utf-8", newline="") as fh:
                    disk = fh.read()
            except OSError:
                disk = None
            if disk != content:
                print("MISMATCH:", name, file=sys.stderr)
                bad += 1
        if bad or problems:
            print("check FAILED (%d mismatched files, %d validation problems)" % (bad, len(problems)))
            return 1
        print("check OK: %d files match, gold validated" % len(files))
        return 0
    if problems and "--force" not in argv:
        print("refusing to write: %d validation problems (use --force)" % len(problems))
        return 1
    for name, content in files.items():
        with open(os.path.join(HERE, name), "w", encoding="utf-8", newline="") as fh:
            fh.write(content)
    print("wrote %d files" % len(files))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
