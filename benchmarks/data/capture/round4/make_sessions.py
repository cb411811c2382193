#!/usr/bin/env python3
"""Deterministic generator for a held-back memory-capture test set.

Writes session-01.jsonl .. session-18.jsonl (Claude Code transcript JSONL),
gold.jsonl (expected memories + traps per session) and README.md.

    python3 make_sessions.py           # (re)write all files
    python3 make_sessions.py --check   # verify files on disk are byte-identical

Python 3.11 standard library only. All randomness comes from a seeded
random.Random per session, so reruns are byte-identical.
"""
import argparse
import datetime
import json
import os
import random
import re
import string
import sys
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
SEED = 4_2025_11
VERSION = "2.0.41"
MODEL = "claude-sonnet-4-5-20250929"
B62 = string.ascii_letters + string.digits

SESSIONS = []


def session(**kw):
    SESSIONS.append(kw)


# ---------------------------------------------------------------- turn helpers
def U(text):
    """What the person types."""
    return {"k": "u", "text": text}


def A(text):
    """Assistant text-only turn (end_turn)."""
    return {"k": "a", "text": text}


def B(text, command, out, err=0, desc=""):
    """Assistant text + Bash tool call, followed by its tool_result."""
    return {"k": "t", "text": text, "tool": "Bash", "command": command, "out": out,
            "err": err, "desc": desc}


def R(text, path, content, start=1, total=None):
    return {"k": "t", "text": text, "tool": "Read", "path": path, "content": content,
            "start": start, "total": total, "err": 0}


def E(text, path, old, new, start=1, snippet=None):
    return {"k": "t", "text": text, "tool": "Edit", "path": path, "old": old, "new": new,
            "start": start, "snippet": snippet, "err": 0}


def W(text, path, content):
    return {"k": "t", "text": text, "tool": "Write", "path": path, "content": content, "err": 0}


def G(text, pattern, out, path=None, glob=None):
    return {"k": "t", "text": text, "tool": "Grep", "pattern": pattern, "out": out,
            "path": path, "glob": glob, "err": 0}


def GL(text, pattern, files):
    return {"k": "t", "text": text, "tool": "Glob", "pattern": pattern, "files": files, "err": 0}


def TD(text, todos):
    return {"k": "t", "text": text, "tool": "TodoWrite", "todos": todos, "err": 0}


def M(mtype, text, keywords, src="user"):
    assert mtype in ("decision", "convention", "preference", "antipattern", "fact"), mtype
    return {"type": mtype, "text": text, "keywords": keywords, "src": src}


def numbered(content, start=1):
    return "\n".join(f"{i:>6}→{line}" for i, line in enumerate(content.split("\n"), start))


# ---------------------------------------------------------------- id helpers
def rid(rng, n):
    return "".join(rng.choice(B62) for _ in range(n))


def ruuid(rng):
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def ts(t):
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"


# ---------------------------------------------------------------- builder
def build_session(idx, s):
    rng = random.Random(SEED * 100 + idx)
    sid = ruuid(rng)
    y, mo, d, h = s["date"]
    t = datetime.datetime(y, mo, d, h, rng.randint(0, 59), rng.randint(0, 59),
                          rng.randint(0, 999) * 1000)
    cwd = s["cwd"]
    lines = []
    texts = []  # (kind, text) kind in user/assistant/tool
    parent = [None]

    def absp(p):
        return p if p.startswith("/") or p.startswith("~") else cwd + "/" + p

    def base(kind):
        u = ruuid(rng)
        rec = {"parentUuid": parent[0], "isSidechain": False, "userType": "external",
               "cwd": cwd, "sessionId": sid, "version": VERSION, "gitBranch": s["branch"]}
        parent[0] = u
        return rec, u

    def advance(lo, hi):
        nonlocal t
        t = t + datetime.timedelta(seconds=rng.randint(lo, hi), milliseconds=rng.randint(0, 999))

    def user_line(content, tur=None, gap=(25, 200)):
        advance(*gap)
        rec, u = base("user")
        rec["type"] = "user"
        rec["message"] = {"role": "user", "content": content}
        rec["uuid"] = u
        rec["timestamp"] = ts(t)
        if tur is not None:
            rec["toolUseResult"] = tur
        lines.append(rec)

    def assistant_line(content, stop):
        advance(3, 45)
        rec, u = base("assistant")
        out_tokens = sum(len(c.get("text", "")) for c in content) // 4 + rng.randint(20, 180)
        rec["message"] = {
            "id": "msg_01" + rid(rng, 22), "type": "message", "role": "assistant",
            "model": MODEL, "content": content, "stop_reason": stop, "stop_sequence": None,
            "usage": {"input_tokens": rng.randint(3, 12),
                      "cache_creation_input_tokens": rng.randint(200, 6000),
                      "cache_read_input_tokens": rng.randint(12000, 90000),
                      "output_tokens": out_tokens, "service_tier": "standard"}}
        rec["requestId"] = "req_011CV" + rid(rng, 18)
        rec["type"] = "assistant"
        rec["uuid"] = u
        rec["timestamp"] = ts(t)
        lines.append(rec)

    for turn in s["turns"]:
        if turn["k"] == "u":
            user_line(turn["text"])
            texts.append(("user", turn["text"]))
            continue
        if turn["k"] == "a":
            assistant_line([{"type": "text", "text": turn["text"]}], "end_turn")
            texts.append(("assistant", turn["text"]))
            continue
        # tool turn
        tool = turn["tool"]
        tid = "toolu_01" + rid(rng, 22)
        if tool == "Bash":
            inp = {"command": turn["command"]}
            if turn["desc"]:
                inp["description"] = turn["desc"]
            out = turn["out"]
            if turn["err"]:
                result = f"Exit code {turn['err']}\n{out}"
                tur = "Error: " + result
            else:
                result = out
                tur = {"stdout": out, "stderr": "", "interrupted": False, "isImage": False}
        elif tool == "Read":
            p = absp(turn["path"])
            content = turn["content"]
            n = content.count("\n") + 1
            inp = {"file_path": p}
            if turn["start"] > 1:
                inp["offset"] = turn["start"]
                inp["limit"] = n
            total = turn["total"] or (turn["start"] + n - 1)
            result = numbered(content, turn["start"])
            tur = {"type": "text", "file": {"filePath": p, "content": content, "numLines": n,
                                            "startLine": turn["start"], "totalLines": total}}
        elif tool == "Edit":
            p = absp(turn["path"])
            inp = {"file_path": p, "old_string": turn["old"], "new_string": turn["new"]}
            snip = turn["snippet"] if turn["snippet"] is not None else turn["new"]
            result = (f"The file {p} has been updated. Here's the result of running `cat -n` "
                      f"on a snippet of the edited file:\n" + numbered(snip, turn["start"]))
            tur = {"filePath": p, "oldString": turn["old"], "newString": turn["new"],
                   "userModified": False, "replaceAll": False}
        elif tool == "Write":
            p = absp(turn["path"])
            inp = {"file_path": p, "content": turn["content"]}
            result = f"File created successfully at: {p}"
            tur = {"type": "create", "filePath": p, "content": turn["content"],
                   "structuredPatch": []}
        elif tool == "Grep":
            inp = {"pattern": turn["pattern"], "output_mode": "content", "-n": True}
            if turn["path"]:
                inp["path"] = absp(turn["path"])
            if turn["glob"]:
                inp["glob"] = turn["glob"]
            result = turn["out"]
            tur = {"mode": "content", "numFiles": 0, "filenames": [], "content": turn["out"],
                   "numLines": turn["out"].count("\n") + 1}
        elif tool == "Glob":
            inp = {"pattern": turn["pattern"]}
            files = [absp(f) for f in turn["files"]]
            result = "\n".join(files)
            tur = {"filenames": files, "durationMs": rng.randint(8, 140),
                   "numFiles": len(files), "truncated": False}
        elif tool == "TodoWrite":
            inp = {"todos": turn["todos"]}
            result = ("Todos have been modified successfully. Ensure that you continue to use "
                      "the todo list to track your progress. Please proceed with the current "
                      "tasks if applicable")
            tur = {"oldTodos": [], "newTodos": turn["todos"]}
        else:
            raise ValueError(tool)
        content = []
        if turn["text"]:
            content.append({"type": "text", "text": turn["text"]})
            texts.append(("assistant", turn["text"]))
        content.append({"type": "tool_use", "id": tid, "name": tool, "input": inp})
        assistant_line(content, "tool_use")
        block = {"tool_use_id": tid, "type": "tool_result", "content": result}
        if turn["err"]:
            block["is_error"] = True
        user_line([block], tur=tur, gap=(1, 25))
        texts.append(("tool", result))
    return lines, texts


# ---------------------------------------------------------------- validation
CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")


def word_hit(kw, text):
    if CJK.search(kw):
        return kw.lower() in text.lower()
    kw = kw.lower()
    forms = {kw, kw + "s", kw + "es", kw + "ing", kw + "ed", kw + "d"}
    for tok in re.findall(r"\w+", text.lower()):
        if tok in forms:
            return True
        for suf in ("es", "s", "ing", "ed", "d"):
            if tok.endswith(suf) and tok[: -len(suf)] == kw:
                return True
    return False


def validate(s, lines, texts):
    errs, warns = [], []
    name = s["name"]
    if not 18 <= len(lines) <= 35:
        errs.append(f"{name}: {len(lines)} lines")
    if not 2 <= len(s["memories"]) <= 4:
        errs.append(f"{name}: {len(s['memories'])} memories")
    if not 4 <= len(s["traps"]) <= 6:
        errs.append(f"{name}: {len(s['traps'])} traps")
    for tr in s["traps"]:
        if not any(tr in tx for _, tx in texts):
            errs.append(f"{name}: trap not verbatim: {tr!r}")
    for m in s["memories"]:
        kws = m["keywords"]
        if not 2 <= len(kws) <= 3:
            errs.append(f"{name}: keyword count {kws}")
        for k in kws:
            if not CJK.search(k) and not re.fullmatch(r"[^\W_]+", k):
                errs.append(f"{name}: keyword not a plain word: {k!r}")
        hits = [(kind, tx) for kind, tx in texts if all(word_hit(k, tx) for k in kws)]
        if not any(kind == m["src"] for kind, _ in hits):
            errs.append(f"{name}: keywords {kws} not together in a {m['src']} message")
        if len(hits) > 1:
            warns.append(f"{name}: keywords {kws} co-occur in {len(hits)} messages "
                         f"({', '.join(k for k, _ in hits)})")
        for tr in s["traps"]:
            if all(word_hit(k, tr) for k in kws):
                errs.append(f"{name}: trap {tr!r} holds keywords {kws}")
    return errs, warns


# ---------------------------------------------------------------- output
def dumps(rec):
    return json.dumps(rec, ensure_ascii=False, separators=(",", ":"))


LANG_NAMES = {"en": "English", "de": "German", "es": "Spanish", "zh": "Chinese (Simplified)",
              "pt": "Portuguese (Brazil)"}


def render_all():
    files = {}
    gold = []
    problems, warnings = [], []
    stats = []
    for idx, s in enumerate(SESSIONS, 1):
        assert s["name"] == f"session-{idx:02d}", s["name"]
        lines, texts = build_session(idx, s)
        e, w = validate(s, lines, texts)
        problems += e
        warnings += w
        files[s["name"] + ".jsonl"] = "".join(dumps(r) + "\n" for r in lines)
        gold.append({"session": s["name"], "language": s["lang"],
                     "memories": [{"type": m["type"], "text": m["text"],
                                   "keywords": m["keywords"]} for m in s["memories"]],
                     "not_memories": s["traps"]})
        stats.append((s, len(lines)))
    files["gold.jsonl"] = "".join(dumps(g) + "\n" for g in gold)
    files["README.md"] = readme(stats)
    return files, problems, warnings


def readme(stats):
    by_type = {}
    tot_m = tot_t = tot_l = 0
    rows = []
    for s, n in stats:
        for m in s["memories"]:
            by_type[m["type"]] = by_type.get(m["type"], 0) + 1
        tot_m += len(s["memories"])
        tot_t += len(s["traps"])
        tot_l += n
        types = ", ".join(m["type"] for m in s["memories"])
        rows.append(f"| {s['name']} | {s['lang']} | {s['project']} | {n} | "
                    f"{len(s['memories'])} ({types}) | {len(s['traps'])} |")
    order = ["decision", "convention", "preference", "antipattern", "fact"]
    type_line = ", ".join(f"{t} {by_type.get(t, 0)}" for t in order)
    langs = {}
    for s, _ in stats:
        langs[s["lang"]] = langs.get(s["lang"], 0) + 1
    lang_line = ", ".join(f"{LANG_NAMES[k]} ({k}) {v}" for k, v in langs.items())
    return f"""# Held-back capture set 4

Test data for a tool that reads Claude Code session transcripts and captures
durable memories (decisions, conventions, preferences, antipatterns, facts).
It was written apart from the software it tests and is meant to score its
recall (gold `memories`) and precision (`not_memories` traps).

## Files

- `session-01.jsonl` … `session-18.jsonl` — one Claude Code transcript per
  session, one JSON object per line. Fields per line: `parentUuid` (previous
  line's `uuid`, `null` on the first), `isSidechain` (false), `userType`
  ("external"), `cwd`, `sessionId` (one UUID per session), `version`
  ("{VERSION}"), `gitBranch`, `type` ("user"/"assistant"), `message`, `uuid`,
  `timestamp` (ISO 8601, milliseconds, `Z`).
  - user lines typed by the person: `message = {{"role":"user","content":"<string>"}}`
  - tool results: `message.content = [{{"tool_use_id":…,"type":"tool_result","content":"<output>"}}]`
    (with `"is_error": true` for failed commands) plus a top-level `toolUseResult`
  - assistant lines: `message` with `id` (`msg_…`), `model` ("{MODEL}"),
    `content` = text block and optionally one `tool_use` block
    (Read, Edit, Write, Bash, Grep, Glob, TodoWrite), `stop_reason`
    ("tool_use"/"end_turn"), `usage`; plus a top-level `requestId`.
- `gold.jsonl` — one line per session:
  `{{"session","language","memories":[{{"type","text","keywords"}}],"not_memories":[…]}}`.
  - `type` is one of decision, convention, preference, antipattern, fact.
  - `text` is the memory as one sentence (written in the session's language).
  - `keywords` are 2 (max 3) distinctive words, each verbatim
    (case-insensitive) in the message where the memory is said, and chosen so
    that no trap holds all of them. Matching is meant to be word-based and
    tolerant of plural/-ing/-ed endings; Chinese keywords are substrings.
  - For a proposal made by the assistant and accepted by the user ("ok go
    with your second option"), the keywords are taken from the assistant's
    proposal sentence and the memory text says so.
  - For a decision reversed later in the same session, only the final one is
    gold; the earlier one is listed in `not_memories`.
  - `not_memories` are trap texts exactly as they appear in the transcript
    (a substring of a user message, assistant text or tool output):
    hypotheticals, questions, rejected options, quoted docs and errors, tool
    output that reads like a rule, generic assistant advice, someone else's
    quoted opinion, plans for today only, temporary workarounds, reversed
    decisions.
- `make_sessions.py` — the generator (this README is generated too).

## Sessions

| session | lang | project / person | lines | memories | traps |
|---|---|---|---|---|---|
{chr(10).join(rows)}

**Totals:** {len(stats)} sessions, {tot_l} transcript lines, {tot_m} memories
({type_line}), {tot_t} traps.

Languages: {lang_line}.

## How it was made

Every conversation, memory and trap was written by hand in `make_sessions.py`
(no model output, no real transcripts). The script assembles the turns into
Claude Code's JSONL format; uuids, message/request/tool ids, token counts and
timestamps come from `random.Random` seeded per session, so a rerun gives
byte-identical files. `python3 make_sessions.py --check` regenerates in memory
and compares with the files on disk (exit status 1 on any difference). On
every run the script also validates the data: 18–35 lines per session, 2–4
memories and 4–6 traps per session, every trap verbatim in the transcript,
all keywords of a memory present together in one message of the right
speaker, and no trap holding all keywords of any memory.
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--check", action="store_true", help="verify files on disk")
    ap.add_argument("--out", default=HERE)
    args = ap.parse_args()
    files, problems, warnings = render_all()
    for w in warnings:
        print("note:", w, file=sys.stderr)
    if problems:
        for p in problems:
            print("ERROR:", p, file=sys.stderr)
        return 2
    if args.check:
        bad = 0
        for name, data in files.items():
            path = os.path.join(args.out, name)
            try:
                with open(path, "rb") as f:
                    disk = f.read()
            except FileNotFoundError:
                print(f"missing: {name}")
                bad += 1
                continue
            if disk != data.encode("utf-8"):
                print(f"differs: {name}")
                bad += 1
        print("check ok" if not bad else f"check FAILED ({bad} files)")
        return 1 if bad else 0
    for name, data in files.items():
        with open(os.path.join(args.out, name), "wb") as f:
            f.write(data.encode("utf-8"))
    print(f"wrote {len(files)} files to {args.out}")
    return 0


# =============================================================== SESSIONS
# ---------------------------------------------------------------- session-01
session(
    name="session-01", lang="en", date=(2025, 3, 4, 10),
    project="game studio tools programmer, Unity editor tooling (C#)",
    cwd="/Users/tomasz/dev/bramble-tools", branch="fix/validator-missing-script",
    turns=[
        U(r"""the asset validator window throws a NullReferenceException whenever a prefab has a missing script on it. it's Assets/Editor/Validation/AssetValidatorWindow.cs, can you take a look"""),
        R("I'll start by reading the validator window.", "Assets/Editor/Validation/AssetValidatorWindow.cs", r"""        private void RunValidation()
        {
            _results.Clear();
            // NOTE: never call AssetDatabase.Refresh() from inside OnGUI, it re-enters the import pipeline
            var guids = AssetDatabase.FindAssets("t:Prefab", new[] { _rootFolder });
            foreach (var guid in guids)
            {
                var path = AssetDatabase.GUIDToAssetPath(guid);
                var prefab = AssetDatabase.LoadAssetAtPath<GameObject>(path);
                foreach (var component in prefab.GetComponentsInChildren<Component>(true))
                {
                    var type = component.GetType();
                    foreach (var rule in _rules)
                    {
                        if (rule.AppliesTo(type))
                            _results.AddRange(rule.Validate(component, path));
                    }
                }
            }
            _lastRun = DateTime.Now;
            Repaint();
        }""", start=58, total=214),
        B("Let me pull the exception out of the editor log to see the exact frame.",
          r"""grep -n -A6 "NullReferenceException" ~/Library/Logs/Unity/Editor.log | tail -14""",
          r"""48211:NullReferenceException: Object reference not set to an instance of an object
48212-Bramble.Tools.Validation.AssetValidatorWindow.RunValidation () (at Assets/Editor/Validation/AssetValidatorWindow.cs:69)
48213-Bramble.Tools.Validation.AssetValidatorWindow.OnGUI () (at Assets/Editor/Validation/AssetValidatorWindow.cs:41)
48214-UnityEditor.HostView.InvokeOnGUI (UnityEngine.Rect onGUIPosition) (at /Users/bokken/build/output/unity/unity/Editor/Mono/HostView.cs:385)
48215-UnityEditor.DockArea.DrawView (UnityEngine.Rect dockAreaRect) (at /Users/bokken/build/output/unity/unity/Editor/Mono/GUI/DockArea.cs:359)
48216-UnityEngine.GUIUtility:ProcessEvent(Int32, IntPtr, Boolean&)
48217-
48218:NullReferenceException: Object reference not set to an instance of an object
48219-Bramble.Tools.Validation.AssetValidatorWindow.RunValidation () (at Assets/Editor/Validation/AssetValidatorWindow.cs:69)
48220-Bramble.Tools.Validation.AssetValidatorWindow.OnGUI () (at Assets/Editor/Validation/AssetValidatorWindow.cs:41)""",
          desc="Find NRE stack traces in Editor.log"),
        A(r"""Found it. Line 69 is `var type = component.GetType();`. When a GameObject has a missing script, `GetComponentsInChildren<Component>(true)` still returns an entry for that slot, but it's a **null** reference (Unity's fake-null for a component whose MonoScript can't be resolved). Calling `GetType()` on it throws.

There's a second, smaller problem: `RunValidation()` is called from `OnGUI` (line 41), so the whole scan runs on every repaint when `_autoRun` is on.

Proposed fix:

```csharp
foreach (var component in prefab.GetComponentsInChildren<Component>(true))
{
    if (component == null)
    {
        _results.Add(ValidationResult.Error(path, "Missing script (component slot is null)"));
        continue;
    }

    var type = component.GetType();
    foreach (var rule in _rules)
    {
        if (rule.AppliesTo(type))
            _results.AddRange(rule.Validate(component, path));
    }
}
```

This reports the missing script as a validation error instead of crashing, which is arguably what the validator should have been doing all along. I can also move the auto-run out of `OnGUI` into `EditorApplication.delayCall` so it doesn't run per repaint. Want me to go ahead?"""),
        U(r"""ok do it. heads up: all editor tooling has to stay compatible with Unity 2021.3 LTS, the art team is pinned on it until after the Harvest milestone, so no APIs newer than that"""),
        E("Applying the null check and reporting missing scripts as errors.",
          "Assets/Editor/Validation/AssetValidatorWindow.cs",
          r"""                foreach (var component in prefab.GetComponentsInChildren<Component>(true))
                {
                    var type = component.GetType();""",
          r"""                foreach (var component in prefab.GetComponentsInChildren<Component>(true))
                {
                    if (component == null)
                    {
                        _results.Add(ValidationResult.Error(path, "Missing script (component slot is null)"));
                        continue;
                    }

                    var type = component.GetType();""", start=67),
        B("Running the EditMode validation tests in batch mode against the 2021.3 editor.",
          r"""/Applications/Unity/Hub/Editor/2021.3.33f1/Unity.app/Contents/MacOS/Unity -batchmode -nographics -projectPath . -runTests -testPlatform EditMode -testFilter "Bramble.Tools.Tests.Validation" -testResults /tmp/validation-results.xml -logFile - 2>&1 | grep -E "Test run|Passed|Failed|Skipped" | tail -6""",
          r"""[TestRunner] Test run started: 15 tests
[TestRunner]   Passed  AssetValidatorWindowTests.MissingScript_IsReportedAsError
[TestRunner]   Passed  AssetValidatorWindowTests.EmptyFolder_ProducesNoResults
[TestRunner]   Skipped TextureRuleTests.Streaming_Mips_RequiresAddressables (Ignored: needs addressables package)
[TestRunner] Test run completed. 14 passed, 0 failed, 1 skipped
Exiting batchmode successfully now!""", desc="Run EditMode validation tests"),
        A(r"""All green on 2021.3.33f1: 14 passed, 1 skipped (the addressables one was already ignored). The new `MissingScript_IsReportedAsError` test covers the crash.

I only used APIs that exist in 2021.3 (`ValidationResult.Error` is ours; nothing from `PrefabUtility` newer than 2020).

One thing worth mentioning: it's a good idea to cache the results of expensive editor queries like FindObjectsOfType between repaints rather than re-running them in every OnGUI pass. The window currently re-queries `_rules` via reflection each time it's focused."""),
        U(r"""what if we moved the whole validator over to UI Toolkit while we're at it?"""),
        A(r"""It's doable, but I'd weigh it carefully:

**Pros**
- Retained-mode UI, so the result list wouldn't be rebuilt every frame; better for 5k+ results.
- USS styling would let the art team tweak colours without touching C#.

**Cons**
- On 2021.3 the runtime/editor split of the toolkit is still a bit rough: `ListView` virtualisation with variable heights and the UI Builder inspector both have known bugs there.
- It's a full rewrite of ~600 lines of immediate-mode drawing code for a window that works.
- Every other window in `Assets/Editor` uses the immediate-mode API, so it would be the odd one out.

If the motivation is performance, a cheaper first step is to only draw the visible rows with `GUI.BeginScrollView` + manual culling."""),
        U(r"""nah, keep IMGUI. the rule here is no UI Toolkit in editor windows until we're off 2021, the uxml builder stuff is too flaky on that version"""),
        B("Understood. Let me run the full validation pass over the art folders to see what else it reports now that it no longer crashes.",
          r"""/Applications/Unity/Hub/Editor/2021.3.33f1/Unity.app/Contents/MacOS/Unity -batchmode -nographics -projectPath . -executeMethod Bramble.Tools.Validation.CLI.RunAll -validationRoot Assets/Art -logFile - 2>&1 | grep -E "^\[(Rule|Result|Summary)\]" | head -12""",
          r"""[Rule] Prefabs must not contain missing scripts (BR-012)
[Rule] Textures must not exceed max size for their category (BR-004)
[Rule] LODGroup must have at least 2 levels for props over 5k tris (BR-019)
[Result] ERROR  Assets/Art/Env/Props/crate_broken_02.prefab: Missing script (component slot is null)
[Result] ERROR  Assets/Art/Env/Props/lantern_hanging.prefab: Missing script (component slot is null)
[Result] ERROR  Assets/Art/Env/Rocks/rock_cliff_01.png: 8192x8192 exceeds Environment max 4096
[Result] ERROR  Assets/Art/Env/Rocks/rock_cliff_02.png: 8192x8192 exceeds Environment max 4096
[Result] ERROR  Assets/Art/Characters/Ferryman/ferryman_body_D.png: 8192x8192 exceeds Character max 4096
[Result] WARN   Assets/Art/Env/Props/barrel_set.prefab: LODGroup has 1 level (7,812 tris)
[Summary] 3 rules, 1,944 assets, 7 errors, 1 warning""", desc="Run full validation over Assets/Art"),
        A(r"""The validator now completes over all 1,944 assets. It flags:

- **2 prefabs with missing scripts** (`crate_broken_02`, `lantern_hanging`) — these are real, the `BreakableProp` script was deleted in the last refactor.
- **3 textures at 8192²** failing the 4096 size rule. These look intentional (hero rocks and the Ferryman), so the rule limits may just be out of date.
- 1 LOD warning on `barrel_set`.

Staying with IMGUI for the window as you said. How do you want to handle the texture rule?"""),
        U(r"""for now just comment out the texture size check, I'll ask Mira what the real limits are. also pls dont ever call SaveAssets inside the per-asset loop again, thats what made the reimport take 40 min last sprint — batch it once at the end. I think the batch renamer still does it"""),
        G("Checking where `SaveAssets` is called.", r"AssetDatabase\.SaveAssets", r"""Assets/Editor/Batch/BatchRenamer.cs:88:                AssetDatabase.SaveAssets();
Assets/Editor/Validation/AutoFixer.cs:141:            AssetDatabase.SaveAssets();""", path="Assets/Editor"),
        E(r"""`AutoFixer.cs:141` already saves once after its loop. `BatchRenamer.cs:88` is inside the `foreach`, so I'm moving it out and wrapping the loop in `StartAssetEditing`/`StopAssetEditing`, and disabling the texture rule registration with a TODO.""",
          "Assets/Editor/Batch/BatchRenamer.cs",
          r"""            foreach (var path in selection)
            {
                var newName = _pattern.Apply(Path.GetFileNameWithoutExtension(path));
                AssetDatabase.RenameAsset(path, newName);
                AssetDatabase.SaveAssets();
            }""",
          r"""            AssetDatabase.StartAssetEditing();
            try
            {
                foreach (var path in selection)
                {
                    var newName = _pattern.Apply(Path.GetFileNameWithoutExtension(path));
                    AssetDatabase.RenameAsset(path, newName);
                }
            }
            finally
            {
                AssetDatabase.StopAssetEditing();
            }
            AssetDatabase.SaveAssets();""", start=82),
        A(r"""Done:

1. **AssetValidatorWindow.cs** — missing scripts are reported as errors instead of throwing.
2. **BatchRenamer.cs** — the save now happens once after the loop, and renames are batched inside `StartAssetEditing`/`StopAssetEditing`, so the importer only runs once.
3. **ValidationRules.cs** — `TextureSizeRule` registration is commented out with `// TODO(tomasz): re-enable once Mira confirms category limits`.

All of it compiles against 2021.3.33f1. The two prefabs with missing scripts still need someone to either remove the component slots or restore `BreakableProp`."""),
    ],
    memories=[
        M("fact", "All editor tooling must stay compatible with Unity 2021.3 LTS because the art team is pinned to it until after the Harvest milestone.", ["LTS", "pinned"]),
        M("convention", "Editor windows stay on IMGUI: no UI Toolkit in editor windows until the project is off Unity 2021.", ["IMGUI", "Toolkit"]),
        M("antipattern", "Never call AssetDatabase.SaveAssets inside the per-asset loop; batch it once at the end.", ["SaveAssets", "loop"]),
    ],
    traps=[
        "never call AssetDatabase.Refresh() from inside OnGUI, it re-enters the import pipeline",
        "it's a good idea to cache the results of expensive editor queries like FindObjectsOfType between repaints",
        "what if we moved the whole validator over to UI Toolkit while we're at it?",
        "[Rule] Prefabs must not contain missing scripts (BR-012)",
        "for now just comment out the texture size check",
    ],
)

# ---------------------------------------------------------------- session-02
session(
    name="session-02", lang="en", date=(2025, 3, 11, 8),
    project="hospital data engineer, FHIR ingestion DAGs in Airflow (Python)",
    cwd="/home/rkaur/src/fhir-etl", branch="feat/encounter-dag",
    turns=[
        U(r"""morning. need a new airflow DAG that pulls Encounter resources from the FHIR server every hour and lands them in the raw schema. copy the pattern from dags/patient_ingest.py. heads up: staging only ever has synthetic patients generated with Synthea, so it's fine to eyeball rows there"""),
        TD("I'll plan this out first.", [
            {"content": "Read patient_ingest.py pattern", "status": "in_progress", "activeForm": "Reading patient_ingest.py pattern"},
            {"content": "Check Encounter search capabilities on the FHIR server", "status": "pending", "activeForm": "Checking Encounter search capabilities"},
            {"content": "Write dags/encounter_ingest.py", "status": "pending", "activeForm": "Writing encounter_ingest DAG"},
            {"content": "Run DAG tests", "status": "pending", "activeForm": "Running DAG tests"}]),
        R("", "dags/patient_ingest.py", r"""from __future__ import annotations

import logging
from datetime import datetime, timedelta

from airflow.decorators import dag, task

from fhir_etl.client import FhirClient
from fhir_etl.sinks import write_raw
from fhir_etl.tz import to_local

log = logging.getLogger(__name__)


@dag(
    schedule="@hourly",
    start_date=datetime(2024, 11, 1),
    catchup=False,
    default_args={"retries": 3, "retry_delay": timedelta(minutes=5)},
    tags=["fhir", "raw"],
)
def patient_ingest():
    @task
    def extract(data_interval_start=None, data_interval_end=None) -> list[dict]:
        client = FhirClient.from_conn("fhir_default")
        bundle = client.search("Patient", _lastUpdated=f"ge{data_interval_start.isoformat()}")
        rows = []
        for res in bundle.iter_resources():
            log.debug("patient %s %s", res["identifier"][0]["value"], res.get("name"))
            rows.append({"id": res["id"], "updated": to_local(res["meta"]["lastUpdated"]), "body": res})
        return rows

    @task
    def load(rows: list[dict]) -> int:
        return write_raw("raw.fhir_patient", rows)

    load(extract())


patient_ingest()""", total=44),
        B("Checking what the server advertises for Encounter searches.",
          r"""curl -s -H "Authorization: Bearer $FHIR_STG_TOKEN" https://fhir-stg.internal.mercyvale.org/fhir/metadata | jq -r '.rest[0].resource[] | select(.type=="Encounter") | .documentation, (.searchParam[].name)'""",
          r"""Servers SHALL support the _lastUpdated search parameter for incremental pulls; clients SHOULD page with _count <= 200.
_id
_lastUpdated
patient
date
status
class""", desc="Inspect Encounter capability statement"),
        A(r"""The staging server supports `_lastUpdated` for Encounter, so we can mirror the Patient DAG exactly. Plan for `dags/encounter_ingest.py`:

```python
@dag(schedule="@hourly", start_date=datetime(2025, 3, 1), catchup=False,
     default_args={"retries": 3, "retry_delay": timedelta(minutes=5)}, tags=["fhir", "raw"])
def encounter_ingest():
    @task
    def extract(data_interval_start=None, data_interval_end=None) -> list[dict]:
        client = FhirClient.from_conn("fhir_default")
        bundle = client.search(
            "Encounter",
            _lastUpdated=[f"ge{data_interval_start.isoformat()}", f"lt{data_interval_end.isoformat()}"],
            _count=200,
        )
        return [
            {"id": r["id"], "patient_ref": r["subject"]["reference"],
             "period_start": r.get("period", {}).get("start"),
             "updated": r["meta"]["lastUpdated"], "body": r}
            for r in bundle.iter_resources()
        ]

    @task
    def load(rows): return write_raw("raw.fhir_encounter", rows)

    load(extract())
```

Two differences from the Patient DAG: I bound the window on both sides (`ge`/`lt`) so retries don't double-load, and I page with `_count=200`. One open question is the timestamps: the Patient DAG converts with `to_local()`. Should Encounter do the same?"""),
        U(r"""looks right. store the timestamps in local time, America/Chicago, that's what the clinicians read"""),
        W("Writing the DAG with the same local-time conversion as the Patient DAG.", "dags/encounter_ingest.py", r"""from __future__ import annotations

import logging
from datetime import datetime, timedelta

from airflow.decorators import dag, task

from fhir_etl.client import FhirClient
from fhir_etl.sinks import write_raw
from fhir_etl.tz import to_local

log = logging.getLogger(__name__)


@dag(schedule="@hourly", start_date=datetime(2025, 3, 1), catchup=False,
     default_args={"retries": 3, "retry_delay": timedelta(minutes=5)}, tags=["fhir", "raw"])
def encounter_ingest():
    @task
    def extract(data_interval_start=None, data_interval_end=None) -> list[dict]:
        client = FhirClient.from_conn("fhir_default")
        bundle = client.search(
            "Encounter",
            _lastUpdated=[f"ge{data_interval_start.isoformat()}", f"lt{data_interval_end.isoformat()}"],
            _count=200,
        )
        rows = []
        for r in bundle.iter_resources():
            log.debug("encounter %s for %s", r["id"], r["subject"].get("identifier", {}).get("value"))
            rows.append({
                "id": r["id"],
                "patient_ref": r["subject"]["reference"],
                "period_start": to_local(r.get("period", {}).get("start")),
                "updated": to_local(r["meta"]["lastUpdated"]),
                "body": r,
            })
        return rows

    @task
    def load(rows: list[dict]) -> int:
        return write_raw("raw.fhir_encounter", rows)

    load(extract())


encounter_ingest()
"""),
        B("", "pytest tests/dags -q", r"""..F....                                                                  [100%]
=================================== FAILURES ===================================
_______________________ test_no_identifiers_in_log_output ______________________

caplog = <_pytest.logging.LogCaptureFixture object at 0x7f3c1a2b9d50>

    def test_no_identifiers_in_log_output(caplog):
        caplog.set_level(logging.DEBUG)
        run_dag_locally("encounter_ingest", fixture="encounters_small.json")
        for rec in caplog.records:
>           assert not MRN_RE.search(rec.getMessage()), f"log record contains identifier: {rec.getMessage()!r}"
E           AssertionError: log record contains identifier: 'encounter enc-00417 for MRN-4471023'

tests/dags/test_logging.py:22: AssertionError
=========================== short test summary info ============================
FAILED tests/dags/test_logging.py::test_no_identifiers_in_log_output - AssertionError: log record contains identifier: 'encounter enc-00417 for MRN-4471023'
1 failed, 6 passed in 3.41s""", err=1),
        A(r"""One failure: `test_no_identifiers_in_log_output`. My `log.debug` line prints the subject's identifier, which on this server is the medical record number. I copied the idea from `patient_ingest.py`, which does the same thing (it logs identifier *and* name at line 29) — the test just doesn't cover that DAG yet.

I'd drop the identifier from the Encounter log line and only log the FHIR resource id, which is an opaque server id. Should I fix the Patient DAG the same way?"""),
        U(r"""yeah never log MRNs or patient names, not even at debug level. mask it or drop it. fix patient_ingest too and extend the test to cover it, compliance will have my head otherwise"""),
        E("", "dags/encounter_ingest.py",
          r"""            log.debug("encounter %s for %s", r["id"], r["subject"].get("identifier", {}).get("value"))""",
          r"""            log.debug("encounter %s", r["id"])""", start=27),
        E("", "dags/patient_ingest.py",
          r"""            log.debug("patient %s %s", res["identifier"][0]["value"], res.get("name"))""",
          r"""            log.debug("patient resource %s", res["id"])""", start=29),
        B("Extended the logging test to parametrize over both DAGs; running the suite again.",
          "pytest tests/dags -q", r""".........                                                                [100%]
9 passed in 3.88s"""),
        A(r"""All 9 pass now, including `test_no_identifiers_in_log_output[patient_ingest]` and `[encounter_ingest]`. Neither DAG logs identifiers or names any more; they only log the server-side resource id."""),
        U(r"""nice. Priya thinks we should move the whole thing to dbt eventually, no idea. anyway — should we also pull Observation resources in this DAG? oh and pause the lab_results DAG for today, the vendor feed is down"""),
        B("Pausing the lab results DAG first.", "airflow dags pause lab_results_ingest",
          r"""Dag: lab_results_ingest, paused: True"""),
        A(r"""`lab_results_ingest` is paused; remember to unpause it once the vendor is back (`airflow dags unpause lab_results_ingest`).

On Observations: I wouldn't put them in this DAG. Observation volume is usually 20–50× Encounter volume (every vital sign is one), it has different paging behaviour, and a failure there would block Encounter loads. A separate `observation_ingest` DAG with its own pool is the cleaner shape. In general it's good practice to keep one resource type per DAG so retries stay cheap."""),
        U(r"""ok separate DAG later. actually scratch the local time thing — store everything in UTC and convert in the dashboards. DST last november double-counted an hour of admissions and I don't want that again. patient dag too"""),
        E("", "dags/encounter_ingest.py",
          r"""                "period_start": to_local(r.get("period", {}).get("start")),
                "updated": to_local(r["meta"]["lastUpdated"]),""",
          r"""                "period_start": to_utc(r.get("period", {}).get("start")),
                "updated": to_utc(r["meta"]["lastUpdated"]),""", start=30),
        E("", "dags/patient_ingest.py",
          r"""            rows.append({"id": res["id"], "updated": to_local(res["meta"]["lastUpdated"]), "body": res})""",
          r"""            rows.append({"id": res["id"], "updated": to_utc(res["meta"]["lastUpdated"]), "body": res})""", start=30),
        B("Both DAGs now import `to_utc` instead of `to_local`. Running tests and a dry parse of the DAG folder.",
          "pytest tests/dags -q && airflow dags list-import-errors",
          r""".........                                                                [100%]
9 passed in 3.71s
No data found"""),
        A(r"""Done for today:

- `dags/encounter_ingest.py` — new hourly DAG, bounded `_lastUpdated` window, `_count=200`, stores `period_start`/`updated` as UTC.
- `dags/patient_ingest.py` — switched to UTC and no longer logs identifiers or names.
- `tests/dags/test_logging.py` — covers both DAGs.
- `lab_results_ingest` is paused.

Note: `raw.fhir_patient.updated` now holds UTC for new rows but Chicago time for older ones; you may want a one-off backfill so downstream reporting converts consistently."""),
    ],
    memories=[
        M("fact", "The staging FHIR environment only contains synthetic patients generated with Synthea, so eyeballing rows there is fine.", ["Synthea", "synthetic"]),
        M("antipattern", "Never log MRNs or patient names, not even at debug level; mask or drop them.", ["MRNs", "debug"]),
        M("decision", "Store all timestamps in UTC and convert to local time only in the dashboards.", ["UTC", "dashboards"]),
    ],
    traps=[
        "Servers SHALL support the _lastUpdated search parameter for incremental pulls; clients SHOULD page with _count <= 200.",
        "store the timestamps in local time, America/Chicago, that's what the clinicians read",
        "Priya thinks we should move the whole thing to dbt eventually",
        "should we also pull Observation resources in this DAG?",
        "pause the lab_results DAG for today, the vendor feed is down",
        "In general it's good practice to keep one resource type per DAG so retries stay cheap.",
    ],
)

# ---------------------------------------------------------------- session-03 (de)
session(
    name="session-03", lang="de", date=(2025, 3, 19, 9),
    project="Mobile-Banking-App, Android/Kotlin (deutschsprachiges Team)",
    cwd="/home/lena/projekte/kontoapp-android", branch="feature/ueberweisung-compose",
    turns=[
        U(r"""Hallo! Ich möchte den Überweisungs-Screen neu bauen. Kurz zum Kontext: wir stellen gerade auf Jetpack Compose um – neue Screens bauen wir nur noch in Compose, die alten XML-Layouts fassen wir nur noch bei Bugs an. Schau dir bitte erstmal das TransferFragment.kt an."""),
        R("Ich lese zuerst das bestehende Fragment.", "app/src/main/java/de/kontoapp/transfer/TransferFragment.kt", r"""class TransferFragment : Fragment(R.layout.fragment_transfer) {

    private val viewModel: TransferViewModel by viewModels()
    private var _binding: FragmentTransferBinding? = null
    private val binding get() = _binding!!

    override fun onViewCreated(view: View, savedInstanceState: Bundle?) {
        _binding = FragmentTransferBinding.bind(view)
        binding.submitButton.setOnClickListener {
            val iban = binding.ibanInput.text.toString().replace(" ", "")
            val amount = binding.amountInput.text.toString().toDouble()
            val purpose = binding.purposeInput.text.toString()
            viewModel.submit(iban, amount, purpose)
        }
        viewModel.state.observe(viewLifecycleOwner) { render(it) }
    }
""", start=18, total=96),
        A(r"""Das Fragment ist recht überschaubar. Was mir auffällt:

1. **Zeile 28:** `toDouble()` auf die Betragseingabe – bei `"0,10"` wirft das eine `NumberFormatException` (deutsches Komma), und bei Beträgen wie `0.1 + 0.2` bekommt man Rundungsfehler.
2. Der ViewModel-State ist `LiveData`, für Compose würde ich auf `StateFlow` wechseln.

Vorschlag für die Struktur der neuen Oberfläche:

```kotlin
@Composable
fun TransferScreen(viewModel: TransferViewModel = hiltViewModel()) {
    val state by viewModel.state.collectAsStateWithLifecycle()
    TransferContent(
        state = state,
        onIbanChange = viewModel::onIbanChange,
        onAmountChange = viewModel::onAmountChange,
        onSubmit = viewModel::submit,
    )
}
```

Den Betrag würde ich als String im State halten und erst beim Absenden parsen."""),
        U(r"""Genau, das mit dem toDouble() ist uralt. Bei uns gilt: Geldbeträge niemals als Double, immer BigDecimal oder Cent als Long. Jonas meint übrigens, wir sollten die Biometrie-Bestätigung ganz weglassen, aber das sehe ich nicht so – die bleibt drin."""),
        W("Ich lege das ViewModel mit `StateFlow` und Cent-Beträgen an.", "app/src/main/java/de/kontoapp/transfer/TransferViewModel.kt", r"""@HiltViewModel
class TransferViewModel @Inject constructor(
    private val repo: TransferRepository,
    private val biometric: BiometricGate,
) : ViewModel() {

    private val _state = MutableStateFlow(TransferUiState())
    val state: StateFlow<TransferUiState> = _state.asStateFlow()

    fun onIbanChange(value: String) = _state.update { it.copy(iban = value) }
    fun onAmountChange(value: String) = _state.update { it.copy(amountInput = value) }

    fun submit() = viewModelScope.launch {
        val cents = AmountParser.parseToCents(_state.value.amountInput, Locale.GERMANY)
            ?: return@launch _state.update { it.copy(error = TransferError.InvalidAmount) }
        if (!biometric.confirm()) return@launch
        _state.update { it.copy(loading = true) }
        _state.update { it.copy(loading = false, result = repo.transfer(it.iban, cents, it.purpose)) }
    }
}
"""),
        W("", "app/src/main/java/de/kontoapp/transfer/TransferScreen.kt", r"""@Composable
fun TransferContent(
    state: TransferUiState,
    onIbanChange: (String) -> Unit,
    onAmountChange: (String) -> Unit,
    onSubmit: () -> Unit,
) {
    Column(Modifier.padding(16.dp), verticalArrangement = Arrangement.spacedBy(12.dp)) {
        OutlinedTextField(state.iban, onIbanChange, label = { Text("IBAN") })
        OutlinedTextField(
            value = state.amountInput,
            onValueChange = onAmountChange,
            label = { Text("Betrag") },
            keyboardOptions = KeyboardOptions(keyboardType = KeyboardType.Decimal),
        )
        Button(onClick = onSubmit, enabled = !state.loading) { Text("Überweisen") }
    }
}
"""),
        B("", "./gradlew :app:lintDebug --console=plain 2>&1 | grep -A3 'Warning' | head -12",
          r"""/home/lena/projekte/kontoapp-android/app/src/main/java/de/kontoapp/transfer/TransferScreen.kt:16: Warning: Hardcoded string "Überweisen", should use @string resource [HardcodedText]
        Button(onClick = onSubmit, enabled = !state.loading) { Text("Überweisen") }
                                                                    ~~~~~~~~~~~~
/home/lena/projekte/kontoapp-android/app/src/main/java/de/kontoapp/transfer/TransferScreen.kt:13: Warning: Hardcoded string "Betrag", should use @string resource [HardcodedText]""",
          desc="Lint auf dem neuen Screen"),
        A(r"""Lint meldet nur die hartkodierten Strings, die ziehe ich gleich in `strings.xml` (`transfer_amount_label`, `transfer_submit`).

Zum neuen Endpoint `/v2/transfers`: der hat ein eigenes Zertifikat, das Pinning müssen wir also ergänzen. Dafür gibt es zwei Wege:

**Variante 1:** Pinning im Code über OkHttp `CertificatePinner`, die Hashes liegen dann in `NetworkModule.kt`.

**Variante 2:** Pinning deklarativ über die Netzwerksicherheitskonfiguration (`res/xml/network_security_config.xml`) mit einem `pin-set` samt Ablaufdatum.

Variante 2 hat den Vorteil, dass die Pins nicht im Code verstreut sind, für alle HTTP-Clients (auch WebViews und Drittanbieter-SDKs) gelten und das Ablaufdatum einen Lockout verhindert, falls wir vergessen zu rotieren. Variante 1 ist flexibler, wenn man Pins zur Laufzeit nachladen will."""),
        U(r"""Sollten wir nicht gleich auf Kotlin Multiplatform gehen, dann hätten wir iOS mit dabei? ... nee, vergiss es, ist nicht unser Thema. Nimm die zweite Variante fürs Pinning."""),
        W("", "app/src/main/res/xml/network_security_config.xml", r"""<?xml version="1.0" encoding="utf-8"?>
<network-security-config>
    <domain-config cleartextTrafficPermitted="false">
        <domain includeSubdomains="true">api.kontoapp.de</domain>
        <pin-set expiration="2026-06-30">
            <pin digest="SHA-256">q8Ys7yZ1kF0xw2V1mZ9yB3Jx8nqQ4lGk2fX0cR5tH7E=</pin>
            <pin digest="SHA-256">Lm3Pq9ZsT2vW8nK1yX4cB7dR6fH0jA5gE9uQ2oN3iV8=</pin>
        </pin-set>
    </domain-config>
</network-security-config>
"""),
        E("", "app/src/main/AndroidManifest.xml",
          r"""        android:theme="@style/Theme.KontoApp">""",
          r"""        android:theme="@style/Theme.KontoApp"
        android:networkSecurityConfig="@xml/network_security_config">""", start=14),
        B("Jetzt die Unit- und Screenshot-Tests.", "./gradlew :app:testDebugUnitTest --console=plain 2>&1 | tail -12",
          r"""> Task :app:testDebugUnitTest

de.kontoapp.transfer.AmountParserTest > parsesGermanDecimalComma PASSED
de.kontoapp.transfer.AmountParserTest > rejectsThreeDecimals PASSED
de.kontoapp.transfer.TransferViewModelTest > submitWithoutBiometricDoesNothing PASSED
de.kontoapp.transfer.TransferScreenScreenshotTest > rendersEmptyState FAILED
    java.lang.AssertionError: Images differ (by 0.41%) - see build/paparazzi/failures/delta-de.kontoapp.transfer_TransferScreenScreenshotTest_rendersEmptyState.png

24 tests completed, 1 failed

FAILURE: Build failed with an exception.""", err=1),
        A(r"""Bis auf einen Test läuft alles: `TransferScreenScreenshotTest.rendersEmptyState` weicht um 0,41 % ab. Das Delta-Bild zeigt nur Kantenglättung an der Schrift im Button – typisch für den bekannten Font-Rendering-Unterschied zwischen Paparazzi 1.2 und dem aktuellen Layoutlib. Inhaltlich ist der Screen identisch. Ich kann die Golden-Images neu aufnehmen oder den Test vorerst deaktivieren."""),
        U(r"""Den Screenshot-Test überspringen wir heute erstmal, das Paparazzi-Update kommt nächste Woche. Mach ein @Ignore mit TODO rein."""),
        E("", "app/src/test/java/de/kontoapp/transfer/TransferScreenScreenshotTest.kt",
          r"""    @Test
    fun rendersEmptyState() {""",
          r"""    @Ignore("TODO(lena): nach Paparazzi-Update wieder aktivieren, Font-Rendering-Delta")
    @Test
    fun rendersEmptyState() {""", start=21),
        B("", "./gradlew :app:testDebugUnitTest --console=plain 2>&1 | tail -4",
          r"""24 tests completed, 0 failed, 1 skipped

BUILD SUCCESSFUL in 41s
38 actionable tasks: 6 executed, 32 up-to-date"""),
        A(r"""Fertig:

- `TransferScreen.kt` / `TransferViewModel.kt` – neue Compose-UI, `StateFlow`, Beträge werden als Cent (`Long`) über `AmountParser` verarbeitet, Biometrie-Bestätigung bleibt vor dem Absenden.
- `network_security_config.xml` + Manifest – Pinning für `api.kontoapp.de` mit zwei Pins (aktiv + Backup) und Ablauf 30.06.2026.
- Screenshot-Test mit `@Ignore` und TODO markiert.

Das alte `TransferFragment` habe ich nicht gelöscht; die Navigation zeigt noch darauf, bis ihr umschaltet."""),
    ],
    memories=[
        M("convention", "Neue Screens werden nur noch in Jetpack Compose gebaut; alte XML-Layouts werden nur bei Bugs angefasst.", ["Compose", "Screens"]),
        M("antipattern", "Geldbeträge niemals als Double speichern, immer BigDecimal oder Cent als Long.", ["Geldbeträge", "Double"]),
        M("decision", "Certificate Pinning erfolgt deklarativ über die Netzwerksicherheitskonfiguration mit pin-set (Variante 2 aus dem Vorschlag des Assistenten, vom Nutzer angenommen; Schlüsselwörter stehen im Vorschlag des Assistenten).", ["deklarativ", "Netzwerksicherheitskonfiguration"], src="assistant"),
    ],
    traps=[
        "Jonas meint übrigens, wir sollten die Biometrie-Bestätigung ganz weglassen",
        "Warning: Hardcoded string \"Überweisen\", should use @string resource [HardcodedText]",
        "Pinning im Code über OkHttp `CertificatePinner`, die Hashes liegen dann in `NetworkModule.kt`.",
        "Sollten wir nicht gleich auf Kotlin Multiplatform gehen, dann hätten wir iOS mit dabei?",
        "Den Screenshot-Test überspringen wir heute erstmal",
    ],
)

# ---------------------------------------------------------------- session-04
session(
    name="session-04", lang="en", date=(2025, 4, 2, 20),
    project="open-source maintainer triaging PRs on a Python CLI-parsing library",
    cwd="/home/mvance/oss/argwise", branch="main",
    turns=[
        U(r"""triage time. can you list open PRs with gh and give me a one-line summary of each"""),
        B("", "gh pr list --limit 10 --json number,title,author,labels --template '{{range .}}#{{.number}}\t{{.title}}\t{{.author.login}}{{\"\\n\"}}{{end}}'",
          "#420\tSupport env var fallbacks for options\tjkrell\n#419\tAlways use f-strings instead of .format()\tpy-lint-bot\n#418\tFix crash when --help is combined with a required subcommand\tmsaito\n#416\tDocs: typo in quickstart\tdanielb\n#415\tAdd `choices` validation to positional args\tfernandaq\n#412\tAdd typing_extensions fallback for 3.8\tolderpy\n#409\tWIP: plugin entry points\tmvance",
          desc="List open PRs"),
        A(r"""Open PRs:

- **#420** (jkrell) — env var fallbacks for options (`ARGWISE_<NAME>`); adds a new `env=` kwarg. Behaviour change.
- **#419** (py-lint-bot) — mechanical `.format()` → f-string rewrite across 31 files. Noisy, no behaviour change.
- **#418** (msaito) — fixes a crash when `--help` is passed alongside a required subcommand. Small bugfix.
- **#416** (danielb) — one-word docs typo.
- **#415** (fernandaq) — `choices=` validation for positionals, with tests. Behaviour change.
- **#412** (olderpy) — `typing_extensions` fallback so `Literal`/`Protocol` imports work on 3.8.
- **#409** (you) — WIP plugin entry points."""),
        U(r"""#412 is the 3.8 compat shim one right? close it with a polite note — we're dropping py38 starting with 2.4, so no point carrying the shim. and check if #418 has a changelog entry"""),
        B("", r"""gh pr close 412 --comment "Thanks a lot for putting this together! argwise 2.4 will require Python 3.9+, so we won't need the typing_extensions fallback going forward. Closing, but we really appreciate the effort 🙏" """,
          "✓ Closed pull request #412 (Add typing_extensions fallback for 3.8)"),
        B("", "gh pr diff 418 --name-only", r"""src/argwise/help.py
tests/test_help.py"""),
        R("#418 only touches `help.py` and its test. Let me check what the contributing guide asks for.", "CONTRIBUTING.md", r"""## Pull requests

- Open an issue first for anything larger than a bug fix.
- All new code must have 100% branch coverage.
- Add an entry to `CHANGES.rst` under the "Unreleased" heading describing the change.
- Run `nox -s lint tests` before pushing.""", start=31, total=58),
        A(r"""#418 has no changelog entry — neither a `CHANGES.rst` line nor anything under `changes/`. CONTRIBUTING.md (line 35) still tells contributors to edit `CHANGES.rst` directly, though I noticed `pyproject.toml` has a `[tool.towncrier]` section and there's a `changes/` directory with a few `.bugfix.md` files, so the guide may be out of date."""),
        U(r"""ugh CONTRIBUTING is stale. the rule here is every PR that changes behaviour needs a towncrier fragment in changes/, CHANGES.rst is generated at release time. can you update the doc? also @jkrell commented on #420 'honestly this project should just switch to Poetry' — ignore that lol"""),
        E("", "CONTRIBUTING.md",
          r"""- Add an entry to `CHANGES.rst` under the "Unreleased" heading describing the change.""",
          r"""- If your change affects behaviour, add a news entry under `changes/` with
  `towncrier create <PR number>.<type>.md` (types: feature, bugfix, removal, doc).
  Do not edit `CHANGES.rst` by hand; it is generated at release time.""", start=34),
        B("", r"""gh pr review 418 --request-changes -b "Thanks, the fix looks good! Could you add a news entry under changes/ (e.g. \`towncrier create 418.bugfix.md\`)? Then this is good to go." """,
          "✓ Requested changes to pull request #418"),
        A(r"""Done: CONTRIBUTING.md now points to `changes/` and `towncrier create`, and #418 has a change request asking for the entry.

In general it's a good idea to add a stale bot so PRs without activity for 60 days get labeled automatically — #409 and #412 had both been idle for months."""),
        U(r"""meh, maybe later. should we add type stubs for the plugin API or is that overkill?"""),
        A(r"""Probably overkill: the package already ships `py.typed` and the plugin API in `argwise/plugins.py` is fully annotated inline, so type checkers pick it up directly. Separate `.pyi` stubs only pay off when the runtime code can't carry annotations (C extensions, heavy metaprogramming). I'd revisit it once #409 lands and the entry-point API is stable."""),
        U(r"""ok cool. merge #415 — squash, and keep the PR title as the commit subject, that's how I always want it"""),
        B("", r"""gh pr merge 415 --squash --subject "Add \`choices\` validation to positional args (#415)" --delete-branch""",
          r"""✓ Squashed and merged pull request #415 (Add `choices` validation to positional args)
✓ Deleted branch fernandaq:positional-choices"""),
        A(r"""#415 is squash-merged as "Add `choices` validation to positional args (#415)". Summary of this triage pass:

- closed #412 (py38 shim) with a thank-you note
- requested a news entry on #418
- merged #415
- CONTRIBUTING.md updated for towncrier
- #419, #420, #416 untouched; #416 is a one-click merge whenever you want."""),
    ],
    memories=[
        M("decision", "Python 3.8 (py38) support is being dropped starting with argwise 2.4, so no compatibility shims for it.", ["dropping", "py38"]),
        M("convention", "Every PR that changes behaviour needs a towncrier fragment in changes/; CHANGES.rst is generated at release time.", ["towncrier", "fragment"]),
        M("preference", "PRs are squash-merged with the PR title kept as the commit subject.", ["squash", "subject"]),
    ],
    traps=[
        "Always use f-strings instead of .format()",
        "All new code must have 100% branch coverage.",
        "honestly this project should just switch to Poetry",
        "In general it's a good idea to add a stale bot so PRs without activity for 60 days get labeled automatically",
        "should we add type stubs for the plugin API or is that overkill?",
    ],
)

# ---------------------------------------------------------------- session-05
session(
    name="session-05", lang="en", date=(2025, 4, 9, 14),
    project="SRE on call during a payments API incident (Kubernetes, Argo CD, Go service)",
    cwd="/home/oncall/src/payments-infra", branch="main",
    turns=[
        U(r"""paged — payments-api 5xx rate jumped to 8% ~10 min ago. is it the deploy from 14:02? pull the pod logs"""),
        B("", r"""kubectl --context prod-use2 -n payments logs deploy/payments-api --since=15m --all-containers | grep -E "level=(error|warn)" | tail -8""",
          r"""time=2025-04-09T14:21:07Z level=warn msg="pgx: connection pool exhausted (max_open_conns=50), consider increasing max_open_conns" pool=ledger
time=2025-04-09T14:21:07Z level=error msg="acquire conn: context deadline exceeded" route=/v1/charges latency_ms=5002
time=2025-04-09T14:21:08Z level=error msg="acquire conn: context deadline exceeded" route=/v1/charges latency_ms=5001
time=2025-04-09T14:21:08Z level=warn msg="pgx: connection pool exhausted (max_open_conns=50), consider increasing max_open_conns" pool=ledger
time=2025-04-09T14:21:09Z level=error msg="acquire conn: context deadline exceeded" route=/v1/refunds latency_ms=5003
time=2025-04-09T14:21:10Z level=error msg="acquire conn: context deadline exceeded" route=/v1/charges latency_ms=5002
time=2025-04-09T14:21:11Z level=warn msg="slow query" query=ledger.insert_entry duration_ms=1840
time=2025-04-09T14:21:11Z level=error msg="acquire conn: context deadline exceeded" route=/v1/charges latency_ms=5001""",
          desc="Recent warn/error logs from payments-api"),
        A(r"""It's connection-pool exhaustion on the `ledger` pool, not obviously the deploy: requests time out after 5s waiting to acquire a connection, and `ledger.insert_entry` is taking ~1.8s, so each connection is held much longer than usual.

The 14:02 deploy (`a41c9e2`) only changed the feature-flag config map, no code or DB changes. Traffic is ~1.6× the usual Wednesday level (marketing email went out at 14:00), which fits: more concurrent charges × slower inserts = pool drained."""),
        U(r"""ok lets bump the pool to 200 and roll it. fyi prod for payments is us-east-2, the us-west-2 cluster is just warm standby, don't touch it"""),
        R("", "k8s/overlays/prod-use2/payments-api/configmap.yaml", r"""apiVersion: v1
kind: ConfigMap
metadata:
  name: payments-api-config
  namespace: payments
data:
  LEDGER_DB_HOST: ledger-primary.payments.svc
  LEDGER_MAX_OPEN_CONNS: "50"
  LEDGER_MAX_IDLE_CONNS: "10"
  LEDGER_CONN_MAX_LIFETIME: "30m"
  FEATURE_FLAGS_URL: http://flags.platform.svc/v1""", total=11),
        A(r"""Two ways to get this out:

1. `kubectl edit configmap payments-api-config` in prod-use2 and restart the deployment — live in about a minute.
2. Change `LEDGER_MAX_OPEN_CONNS` in this repo and push; the CD sync rolls it out in about 3–4 minutes with the sync wave.

Which do you want?"""),
        U(r"""don't ever kubectl edit in prod, everything goes through the argo repo, even mid-incident. otherwise argo just reverts it on the next sync and we lose the audit trail"""),
        E("", "k8s/overlays/prod-use2/payments-api/configmap.yaml",
          r'''  LEDGER_MAX_OPEN_CONNS: "50"''',
          r'''  LEDGER_MAX_OPEN_CONNS: "200"''', start=8),
        B("", r"""git commit -am "payments-api: raise ledger pool to 200 (INC-2291)" && git push origin main && argocd app sync payments-api-prod-use2 --timeout 300 | tail -5""",
          r"""[main 7be01d4] payments-api: raise ledger pool to 200 (INC-2291)
 1 file changed, 1 insertion(+), 1 deletion(-)
To github.com:corvid-pay/payments-infra.git
   a41c9e2..7be01d4  main -> main
Name:               argocd/payments-api-prod-use2
Sync Status:        Synced to main (7be01d4)
Health Status:      Progressing
Operation:          Sync
Phase:              Succeeded""", desc="Commit, push and sync via Argo CD"),
        B("Sync went through. Watching error rate and DB health for a couple of minutes.",
          r'''sleep 150; curl -s "http://prometheus.monitoring:9090/api/v1/query" --data-urlencode 'query=sum(rate(http_requests_total{app="payments-api",code=~"5.."}[2m]))/sum(rate(http_requests_total{app="payments-api"}[2m]))' | jq -r '.data.result[0].value[1]'; kubectl --context prod-use2 -n payments logs deploy/payments-api --since=2m | grep -c "too many connections\|remaining connection slots"''',
          r"""0.0431
212""", desc="Check 5xx ratio and Postgres connection errors"),
        A(r"""Partial improvement only: 5xx is down from 8% to ~4.3%, but we now see 212 `remaining connection slots are reserved` errors in two minutes. With 12 pods × 200 connections we're asking Postgres for up to 2,400 connections; the primary's `max_connections` is 400. So the bottleneck just moved from the app's pool to the database, and the primary's CPU is at 94%."""),
        U(r"""Dana from DBA said 'the primary can take 500 connections easily' but clearly not lol. ok revert the pool size change — we're keeping maxOpenConns at 50 and putting pgbouncer in front instead, that's the real fix, I'll ticket it. for now just scale replicas to 12 until traffic calms down"""),
        E("", "k8s/overlays/prod-use2/payments-api/configmap.yaml",
          r'''  LEDGER_MAX_OPEN_CONNS: "200"''',
          r'''  LEDGER_MAX_OPEN_CONNS: "50"''', start=8),
        E("", "k8s/overlays/prod-use2/payments-api/hpa.yaml",
          r"""  minReplicas: 6
  maxReplicas: 12""",
          r"""  minReplicas: 12  # INC-2291 temporary, revert after traffic normalises
  maxReplicas: 12""", start=9),
        B("", r"""git commit -am "payments-api: revert pool to 50, pin 12 replicas during INC-2291" && git push origin main && argocd app sync payments-api-prod-use2 --timeout 300 | grep -E "Sync Status|Health|Phase" """,
          r"""[main 93c6f20] payments-api: revert pool to 50, pin 12 replicas during INC-2291
 2 files changed, 2 insertions(+), 2 deletions(-)
Sync Status:        Synced to main (93c6f20)
Health Status:      Healthy
Phase:              Succeeded"""),
        A(r"""Synced and healthy. State now:

- Pool back to 50 per pod (12 × 50 = 600 app-side, but with the shorter lifetime the observed peak is ~340, under the primary's 400).
- HPA pinned at 12 replicas with a comment marking it temporary.
- us-west-2 untouched.

Follow-up ticket text for PgBouncer, if useful: *"Put PgBouncer (transaction pooling) in front of ledger-primary so app pods can keep small pools; target ≤150 server connections."*"""),
    ],
    memories=[
        M("fact", "Payments production runs in us-east-2; the us-west-2 cluster is only a warm standby and must not be touched.", ["warm", "standby"]),
        M("antipattern", "Never kubectl edit in prod, even mid-incident; every change goes through the Argo repo.", ["kubectl", "argo"]),
        M("decision", "Keep maxOpenConns at 50 per pod and put pgbouncer in front of the database instead of raising the pool size.", ["pgbouncer", "maxOpenConns"]),
    ],
    traps=[
        "is it the deploy from 14:02?",
        "consider increasing max_open_conns",
        "lets bump the pool to 200 and roll it",
        "the primary can take 500 connections easily",
        "for now just scale replicas to 12 until traffic calms down",
    ],
)

# ---------------------------------------------------------------- session-06 (es)
session(
    name="session-06", lang="es", date=(2025, 4, 22, 17),
    project="código de tesis de máster: segmentación de imágenes Sentinel-2 (PyTorch, clúster SLURM)",
    cwd="/home/lucia/tesis/segmentacion-sentinel", branch="experimentos",
    turns=[
        U(r"""Hola! Estoy con el capítulo 4 de la tesis. El script train.py peta con un error de memoria en el clúster, te paso el log. Por cierto, el clúster de la uni (Hércules) va con SLURM y solo tiene GPUs V100 de 16 GB, así que hay que ajustarse a eso."""),
        B("", "tail -n 12 logs/slurm-48213.out",
          r"""Epoch 1/60:   3%|▎         | 41/1380 [00:52<28:11,  1.26s/it, loss=0.912]
Traceback (most recent call last):
  File "/home/lucia/tesis/segmentacion-sentinel/train.py", line 118, in <module>
    main(cfg)
  File "/home/lucia/tesis/segmentacion-sentinel/train.py", line 97, in main
    logits = model(x)
  File "/home/lucia/.conda/envs/tesis/lib/python3.10/site-packages/torch/nn/modules/module.py", line 1511, in _wrapped_call_impl
    return self._call_impl(*args, **kwargs)
torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 15.77 GiB of which 1.21 GiB is free. Of the allocated memory 13.10 GiB is allocated by PyTorch, and 1.05 GiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation."""),
        R("", "train.py", r"""def main(cfg):
    torch.manual_seed(cfg.seed)
    ds = S2SegDataset(cfg.data_root, split="train", tile=512, bands=cfg.bands)
    dl = DataLoader(ds, batch_size=cfg.batch_size, shuffle=True, num_workers=8, pin_memory=True)
    model = UNet(in_ch=len(cfg.bands), n_classes=cfg.n_classes, width=cfg.width).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=1e-4)
    for epoch in range(cfg.epochs):
        model.train()
        for x, y in tqdm(dl, desc=f"Epoch {epoch + 1}/{cfg.epochs}"):
            x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
            logits = model(x)
            loss = F.cross_entropy(logits, y, ignore_index=255)
            opt.zero_grad()
            loss.backward()
            opt.step()""", start=87, total=121),
        A(r"""El problema es el tamaño del batch: `configs/unet_s2.yaml` tiene `batch_size: 32` con teselas de 512×512 y 12 bandas, y la U-Net con `width: 64` guarda muchas activaciones. En una V100 de 16 GB no cabe.

Propuesta: acumulación de gradientes, que mantiene el batch efectivo de 32 sin cambiar los resultados de forma apreciable:

```python
accum = cfg.grad_accum_steps          # p. ej. 4
for step, (x, y) in enumerate(tqdm(dl, desc=f"Epoch {epoch + 1}/{cfg.epochs}")):
    x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
    logits = model(x)
    loss = F.cross_entropy(logits, y, ignore_index=255) / accum
    loss.backward()
    if (step + 1) % accum == 0:
        opt.step()
        opt.zero_grad(set_to_none=True)
```

Con `batch_size: 8` y `grad_accum_steps: 4` debería quedarse en ~9 GB."""),
        U(r"""¿y si usamos mixed precision directamente?"""),
        A(r"""También funcionaría: con `torch.autocast("cuda", dtype=torch.float16)` y un `GradScaler`, las V100 tienen Tensor Cores para fp16 y la memoria de activaciones baja casi a la mitad. Pero cambia algo la numérica (sobre todo en la pérdida con `ignore_index` y clases muy desbalanceadas), así que si ya tienes resultados del capítulo 3 en fp32, la acumulación de gradientes es la opción que menos afecta la comparabilidad. Se pueden combinar más adelante."""),
        U(r"""Vale, haz la acumulación de gradientes con batch 8 x 4. Ah, y los comentarios y docstrings siempre en inglés, aunque la tesis sea en español, que el código lo publicamos en GitHub con el paper."""),
        E("", "train.py",
          r"""            logits = model(x)
            loss = F.cross_entropy(logits, y, ignore_index=255)
            opt.zero_grad()
            loss.backward()
            opt.step()""",
          r"""            logits = model(x)
            # Scale the loss so gradients match a full batch of batch_size * grad_accum_steps.
            loss = F.cross_entropy(logits, y, ignore_index=255) / cfg.grad_accum_steps
            loss.backward()
            if (step + 1) % cfg.grad_accum_steps == 0:
                opt.step()
                opt.zero_grad(set_to_none=True)""", start=97),
        B("Cambié también el bucle a `enumerate` y puse `batch_size: 8`, `grad_accum_steps: 4` en el YAML. Pruebo en seco en local:",
          "python train.py --config configs/unet_s2.yaml --dry-run --max-steps 8",
          r"""[config] batch_size=8 grad_accum_steps=4 effective_batch=32 tile=512 bands=12
[dry-run] step 4/8  loss=0.9871  max_mem_alloc=8.62 GiB
[dry-run] step 8/8  loss=0.9544  max_mem_alloc=8.63 GiB
[dry-run] ok, 2 optimizer steps"""),
        A(r"""Funciona: pico de 8,6 GiB, así que en la V100 sobra margen. El comentario nuevo va en inglés.

En general, conviene fijar también torch.backends.cudnn.deterministic = True para que los resultados sean reproducibles entre ejecuciones."""),
        U(r"""Mi directora dice que debería probar con transformers (SegFormer) pero eso para otro capítulo. Ahora: por hoy salta la validación cruzada, solo quiero ver si converge. Y otra cosa importante: nunca guardes figuras a mano desde el notebook, todas las figuras de la tesis salen de plots/make_figures.py para que sean reproducibles"""),
        E("", "configs/unet_s2.yaml", r"""cv_folds: 5""", r"""cv_folds: 1  # TODO: volver a 5 tras comprobar convergencia""", start=14),
        G("Busco si algún notebook guarda figuras directamente:", r"savefig", r"""notebooks/exploracion_resultados.ipynb:412:    "plt.savefig('../figuras/fig4_3_iou_por_clase.pdf', bbox_inches='tight')\n",
plots/make_figures.py:38:    fig.savefig(OUT / f"{name}.pdf", bbox_inches="tight")""", glob="*.{py,ipynb}"),
        A(r"""`notebooks/exploracion_resultados.ipynb` guarda la figura 4.3 (IoU por clase) directamente con `plt.savefig`. La muevo a `plots/make_figures.py` como función `fig4_3_iou_por_clase` y quito el `savefig` del notebook, ¿vale?"""),
        U(r"""sí, muévelo"""),
        E("", "plots/make_figures.py",
          r"""FIGURES = {""",
          r"""def fig4_3_iou_por_clase(results_csv: Path) -> plt.Figure:
    """ + '"""Per-class IoU bar chart for chapter 4 (Fig. 4.3)."""' + r"""
    df = pd.read_csv(results_csv)
    fig, ax = plt.subplots(figsize=(6.3, 3.2))
    ax.bar(df["clase"], df["iou"], color="#4C72B0")
    ax.set_ylabel("IoU")
    ax.set_ylim(0, 1)
    ax.tick_params(axis="x", rotation=45)
    return fig


FIGURES = {
    "fig4_3_iou_por_clase": lambda: fig4_3_iou_por_clase(RESULTS / "unet_s2_test.csv"),""", start=52),
        B("", "python plots/make_figures.py --only fig4_3_iou_por_clase",
          r"""Saved figuras/fig4_3_iou_por_clase.pdf (1 figure)"""),
        A(r"""Listo:

- `train.py`: acumulación de gradientes (8 × 4), pico de memoria 8,6 GiB.
- `configs/unet_s2.yaml`: `cv_folds: 1` con TODO para volver a 5.
- `plots/make_figures.py`: nueva función para la figura 4.3, docstring en inglés; el notebook ya no guarda la figura.

Puedes lanzar el job con `sbatch jobs/train_unet.sbatch`; el script ya pide `--gres=gpu:v100:1`."""),
    ],
    memories=[
        M("fact", "El clúster de la universidad (Hércules) usa SLURM y solo tiene GPUs V100 de 16 GB.", ["Hércules", "V100"]),
        M("preference", "Comentarios y docstrings siempre en inglés, aunque la tesis sea en español, porque el código se publica en GitHub.", ["docstrings", "inglés"]),
        M("antipattern", "Nunca guardar figuras a mano desde el notebook; todas las figuras de la tesis se generan con plots/make_figures.py.", ["figuras", "mano"]),
    ],
    traps=[
        "try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation",
        "¿y si usamos mixed precision directamente?",
        "En general, conviene fijar también torch.backends.cudnn.deterministic = True",
        "Mi directora dice que debería probar con transformers (SegFormer)",
        "por hoy salta la validación cruzada",
    ],
)

# ---------------------------------------------------------------- session-07
session(
    name="session-07", lang="en", date=(2025, 5, 6, 11),
    project="hardware startup firmware, Zephyr on nRF52840 (C)",
    cwd="/home/arjun/fw/tidepod-fw", branch="bugfix/button-bounce",
    turns=[
        U(r"""button presses are registering 2-3 times on the rev C boards. handler is in src/input/button.c. fyi the rev C boards moved the IMU to i2c1, only the old rev B had it on SPI, in case you see the overlay stuff and get confused"""),
        R("", "src/input/button.c", r"""static struct gpio_callback button_cb;
static const struct gpio_dt_spec button = GPIO_DT_SPEC_GET(DT_ALIAS(sw0), gpios);

static void button_isr(const struct device *dev, struct gpio_callback *cb, uint32_t pins)
{
	ARG_UNUSED(dev);
	ARG_UNUSED(cb);
	ARG_UNUSED(pins);
	app_event_post(APP_EVT_BUTTON_PRESS);
}

int button_init(void)
{
	int err = gpio_pin_configure_dt(&button, GPIO_INPUT);
	if (err) {
		return err;
	}
	err = gpio_pin_interrupt_configure_dt(&button, GPIO_INT_EDGE_TO_ACTIVE);
	if (err) {
		return err;
	}
	gpio_init_callback(&button_cb, button_isr, BIT(button.pin));
	return gpio_add_callback(button.port, &button_cb);
}""", start=12, total=47),
        R("", "boards/arm/tidepod_revc/tidepod_revc.dts", r"""&i2c1 {
	status = "okay";
	pinctrl-0 = <&i2c1_default>;
	clock-frequency = <I2C_BITRATE_FAST>;

	accel: bmi270@68 {
		compatible = "bosch,bmi270";
		reg = <0x68>;
		irq-gpios = <&gpio0 30 GPIO_ACTIVE_HIGH>;
	};
};

/ {
	buttons {
		compatible = "gpio-keys";
		button0: button_0 {
			gpios = <&gpio1 6 (GPIO_PULL_UP | GPIO_ACTIVE_LOW)>;
		};
	};
};""", start=64, total=131),
        A(r"""The ISR posts an event on every active edge with no debounce at all. The rev C switch is a different part (the DTS has it on P1.06 with only the internal pull-up), and its contacts bounce for a few ms, so one press produces 2–3 edges.

Two ways to fix it:

**Option 1:** debounce directly in the GPIO ISR with a busy-wait of ~5 ms and re-read the pin before posting the event.

**Option 2:** defer button handling to the system workqueue and debounce there with a 30 ms delayable work item; the ISR only (re)schedules the work, and the work handler reads the pin once it has been stable.

Option 1 is fewer lines but blocks interrupts for 5 ms on every edge (bad for the BLE stack). Option 2 keeps the ISR tiny and naturally coalesces the bounce edges:

```c
static void button_work_handler(struct k_work *work)
{
	if (gpio_pin_get_dt(&button) == 1) {
		app_event_post(APP_EVT_BUTTON_PRESS);
	}
}
static K_WORK_DELAYABLE_DEFINE(button_work, button_work_handler);

static void button_isr(const struct device *dev, struct gpio_callback *cb, uint32_t pins)
{
	k_work_reschedule(&button_work, K_MSEC(30));
}
```"""),
        U(r"""second one. and whatever you do, no heap allocation after boot, period — we had a fragmentation brick in the field last year"""),
        E("Implementing the second approach with a statically defined work item, so nothing is allocated at runtime.", "src/input/button.c",
          r"""static void button_isr(const struct device *dev, struct gpio_callback *cb, uint32_t pins)
{
	ARG_UNUSED(dev);
	ARG_UNUSED(cb);
	ARG_UNUSED(pins);
	app_event_post(APP_EVT_BUTTON_PRESS);
}""",
          r"""#define BUTTON_DEBOUNCE_MS 30

static void button_work_handler(struct k_work *work)
{
	ARG_UNUSED(work);
	if (gpio_pin_get_dt(&button) == 1) {
		app_event_post(APP_EVT_BUTTON_PRESS);
	}
}

static void button_isr(const struct device *dev, struct gpio_callback *cb, uint32_t pins)
{
	ARG_UNUSED(dev);
	ARG_UNUSED(cb);
	ARG_UNUSED(pins);
	k_work_reschedule(&button_work, K_MSEC(BUTTON_DEBOUNCE_MS));
}""", start=15),
        B("", "west build -b tidepod_revc -p auto 2>&1 | grep -E 'error|warning' | head -6",
          r"""/home/arjun/fw/tidepod-fw/src/input/button.c: In function 'button_isr':
/home/arjun/fw/tidepod-fw/src/input/button.c:35:28: error: 'button_work' undeclared (first use in this function)
   35 |         k_work_reschedule(&button_work, K_MSEC(BUTTON_DEBOUNCE_MS));
      |                            ^~~~~~~~~~~
/home/arjun/fw/tidepod-fw/src/input/button.c:35:28: note: each undeclared identifier is reported only once for each function it appears in
warning: CONFIG_HEAP_MEM_POOL_SIZE should be at least 2048 when CONFIG_BT is enabled (defined at subsys/bluetooth/Kconfig:52)""", err=1),
        E("Forgot the definition itself. Adding it after the handler:", "src/input/button.c",
          r"""static void button_isr(const struct device *dev, struct gpio_callback *cb, uint32_t pins)""",
          r"""static K_WORK_DELAYABLE_DEFINE(button_work, button_work_handler);

static void button_isr(const struct device *dev, struct gpio_callback *cb, uint32_t pins)""", start=26),
        B("", "west build -b tidepod_revc 2>&1 | tail -6",
          r"""[142/148] Linking C executable zephyr/zephyr_pre0.elf
[148/148] Linking C executable zephyr/zephyr.elf
Memory region         Used Size  Region Size  %age Used
           FLASH:      212384 B         1 MB     20.25%
             RAM:       61120 B       256 KB     23.32%
        IDT_LIST:          0 B         2 KB      0.00%"""),
        A(r"""Builds clean. RAM is unchanged apart from the `k_work_delayable` struct (~40 bytes, static). The Kconfig warning about `CONFIG_HEAP_MEM_POOL_SIZE` is pre-existing and comes from the BT subsystem defaults, not from this change."""),
        U(r"""does the nRF52840 have enough RAM for double buffering the IMU FIFO? just curious, not doing it now. just flash the dev kit for today, skip the board, my jlink for rev C is at the office"""),
        A(r"""Yes, comfortably: the BMI270 FIFO is 2 KB, so double buffering costs 4 KB out of the ~195 KB still free. Flashing the nRF52840 DK now."""),
        B("", "west build -b nrf52840dk_nrf52840 -d build-dk && west flash -d build-dk -r jlink",
          r"""-- west flash: rebuilding
ninja: no work to do.
-- west flash: using runner jlink
-- runners.jlink: JLink version: 7.94e
-- runners.jlink: Flashing file: build-dk/zephyr/zephyr.hex
-- runners.jlink: J-Link: Flash download: Bank 0 @ 0x00000000: Skipped. Contents already match
-- runners.jlink: J-Link: Flash download: Total: 1.842s (Prepare: 0.071s, Compare: 0.153s, Erase: 0.598s, Program & Verify: 0.926s)"""),
        U(r"""thx. can you check docs/hw-notes.md, I want to make sure 30 ms is ok for the switch"""),
        R("", "docs/hw-notes.md", r"""## User button (rev C)

Part: Alps SKRPACE010 tactile switch, P1.06, internal pull-up.

From the datasheet, section 4.2:

> Contacts must be debounced for at least 10 ms after release.

Measured on the scope (board #C-014): bounce settles in 3.8 ms on press, 6.1 ms on release.""", start=41, total=88),
        A(r"""30 ms is fine. The scope measurements on board #C-014 show bounce settling in at most 6.1 ms, and 30 ms is well above that while still feeling instant to a user (humans notice delays above ~100 ms). Summary of the change:

- `src/input/button.c`: the ISR now only reschedules a statically defined work item; the press is posted after 30 ms of stable level.
- No runtime allocation added.
- Built for `tidepod_revc`, flashed to the nRF52840 DK only."""),
    ],
    memories=[
        M("fact", "Rev C boards have the IMU on i2c1; only the old rev B boards had it on SPI.", ["IMU", "i2c1"]),
        M("decision", "Button debounce is handled on the system workqueue with a 30 ms delayable work item instead of in the ISR (Option 2 from the assistant's proposal, accepted by the user; keywords are in the assistant's proposal).", ["workqueue", "delayable"], src="assistant"),
        M("antipattern", "No heap allocation after boot, ever (a fragmentation brick happened in the field).", ["heap", "boot"]),
    ],
    traps=[
        "debounce directly in the GPIO ISR with a busy-wait of ~5 ms and re-read the pin before posting the event",
        "CONFIG_HEAP_MEM_POOL_SIZE should be at least 2048 when CONFIG_BT is enabled",
        "does the nRF52840 have enough RAM for double buffering the IMU FIFO?",
        "just flash the dev kit for today, skip the board",
        "Contacts must be debounced for at least 10 ms after release.",
    ],
)

# ---------------------------------------------------------------- session-08
session(
    name="session-08", lang="en", date=(2025, 5, 14, 13),
    project="government forms site (parking permit application), Next.js, accessibility-critical",
    cwd="/Users/sam.okafor/code/apply-for-permit", branch="feat/contact-details-page",
    turns=[
        U(r"""we need the contact details page for the parking permit form (step 3 of 5). heads up: we're legally required to meet WCAG 2.2 AA on this service, it gets audited before go-live"""),
        GL("", "app/(apply)/**/page.tsx", ["app/(apply)/start/page.tsx", "app/(apply)/vehicle/page.tsx",
                                            "app/(apply)/address/page.tsx", "app/(apply)/check-answers/page.tsx"]),
        R("Using the vehicle page as the pattern.", "app/(apply)/vehicle/page.tsx", r"""export default function VehiclePage() {
  const [state, formAction] = useFormState(saveVehicle, initialState);
  return (
    <form action={formAction} noValidate>
      {state.errors.length > 0 && <ErrorSummary errors={state.errors} />}
      <Fieldset legend="About your vehicle" isPageHeading>
        <TextInput
          id="registration"
          name="registration"
          label="Vehicle registration number"
          hint="For example, CU57 ABC"
          error={fieldError(state, "registration")}
          autoComplete="off"
          spellCheck={false}
        />
      </Fieldset>
      <Button type="submit">Continue</Button>
    </form>
  );
}""", start=9, total=34),
        A(r"""The vehicle page uses a server action with `useFormState`, an `ErrorSummary` at the top and per-field errors via `fieldError`. For step 3 I'll follow the same shape with email + phone. For phone validation I'd like to add `libphonenumber-js` rather than hand-rolling UK number parsing."""),
        B("", "npm install libphonenumber-js",
          r"""added 1 package, and audited 912 packages in 4s

187 packages are looking for funding
  run `npm fund` for details

found 0 vulnerabilities"""),
        U(r"""no — we use pnpm here, not npm. delete the package-lock.json it just made"""),
        B("", "rm package-lock.json && git checkout -- package.json && pnpm add libphonenumber-js",
          r"""Packages: +1
+
Progress: resolved 913, reused 912, downloaded 1, added 1, done

dependencies:
+ libphonenumber-js 1.11.4

Done in 2.8s"""),
        W("", "app/(apply)/contact/page.tsx", r"""export default function ContactPage() {
  const [state, formAction] = useFormState(saveContact, initialState);
  const [values, setValues] = useState({ email: "", phone: "" });
  const isValid = isEmail(values.email) && isValidPhoneNumber(values.phone, "GB");
  return (
    <form action={formAction} noValidate>
      {state.errors.length > 0 && <ErrorSummary errors={state.errors} />}
      <Fieldset legend="Your contact details" isPageHeading>
        <TextInput id="email" name="email" type="email" label="Email address" autoComplete="email"
          error={fieldError(state, "email")} onChange={(e) => setValues({ ...values, email: e.target.value })} />
        <TextInput id="phone" name="phone" type="tel" label="Preferred communication modality" autoComplete="tel"
          error={fieldError(state, "phone")} onChange={(e) => setValues({ ...values, phone: e.target.value })} />
      </Fieldset>
      <Button type="submit" disabled={!isValid}>Continue</Button>
    </form>
  );
}
"""),
        A(r"""Created the contact page. The Continue button stays disabled until both the email and the phone number are valid, so users can't submit a half-filled form; server-side validation in `saveContact` still runs as a backstop."""),
        U(r"""never disable the submit button, ever — screen reader users just get stuck not knowing why. validate on submit and show the error summary like every other page. also the policy team wants a progress bar on every page, ignore that for now, design system says no"""),
        R("Checking the design system guidance for the error pattern to match it exactly.", "node_modules/@civic/design-system/docs/components/text-input.md", r"""## Error messages

Show an error summary at the top of the page and an error message next to each field that has a problem.

Do not use placeholder text in place of a label, or for hints or examples.

Make sure errors are linked to the field with `aria-describedby`.""", start=58, total=120),
        E("", "app/(apply)/contact/page.tsx",
          r"""      <Button type="submit" disabled={!isValid}>Continue</Button>""",
          r"""      <Button type="submit">Continue</Button>""", start=15),
        B("Also removed the client-side `isValid`/`values` state, validation now only happens in `saveContact` on submit. Running the page tests with jest-axe:",
          "pnpm test -- contact",
          r""" PASS  app/(apply)/contact/__tests__/page.test.tsx
  ContactPage
    ✓ renders with no axe violations (212 ms)
    ✓ shows error summary and inline errors on empty submit (96 ms)
    ✓ links errors to fields via aria-describedby (41 ms)
    ✓ submit button is never disabled (12 ms)

Test Suites: 1 passed, 1 total
Tests:       4 passed, 4 total"""),
        A(r"""All 4 tests pass, including a new one asserting the button is never disabled, and no axe violations. As a general accessibility practice, it's worth running axe on every page in CI, not just in unit tests."""),
        U(r"""what about a date picker for the 'best time to call' field? and the labels — plain English, aim for a reading age of 9. 'Telephone number' is fine but 'Preferred communication modality' is not lol. oh and for now hardcode the UK postcode regex in the address step, the lookup API is down on dev"""),
        A(r"""On the date picker: the design system advises against calendar widgets for dates the user already knows or can type easily, and for "best time to call" a simple radio group (Morning / Afternoon / Evening) is quicker and more accessible. I'd skip the picker.

Fixing the label now, then the postcode regex."""),
        E("", "app/(apply)/contact/page.tsx",
          r"""label="Preferred communication modality\"""".replace('\\"', '"'),
          r"""label="Telephone number\"""".replace('\\"', '"'), start=11),
        E("", "app/(apply)/address/validate.ts",
          r"""  const result = await lookupPostcode(postcode);""",
          r"""  // TEMP: lookup API down on dev, fall back to format check only
  const result = UK_POSTCODE_RE.test(postcode) ? { valid: true } : await lookupPostcode(postcode);""", start=22),
        A(r"""Done: the phone field label is now "Telephone number", and the address step accepts any well-formed UK postcode without calling the lookup while it's down (marked TEMP). The contact page is ready for review."""),
    ],
    memories=[
        M("fact", "The service is legally required to meet WCAG 2.2 AA and is audited before go-live.", ["WCAG", "legally"]),
        M("convention", "The project uses pnpm, not npm (no package-lock.json).", ["pnpm", "npm"]),
        M("antipattern", "Never disable the submit button; screen reader users get stuck, so validate on submit and show the error summary instead.", ["disable", "reader"]),
        M("preference", "Form labels should be in plain English aimed at a reading age of 9.", ["reading", "age"]),
    ],
    traps=[
        "the policy team wants a progress bar on every page",
        "Do not use placeholder text in place of a label, or for hints or examples.",
        "it's worth running axe on every page in CI, not just in unit tests",
        "what about a date picker for the 'best time to call' field?",
        "for now hardcode the UK postcode regex in the address step",
    ],
)

# ---------------------------------------------------------------- session-09 (zh)
session(
    name="session-09", lang="zh", date=(2025, 5, 27, 22),
    project="机器学习研究员，JAX 语言模型训练代码（TPU 集群）",
    cwd="/home/zhangwei/research/lm-scaling", branch="exp/warmup-sweep",
    turns=[
        U(r"""帮我看一下 train.py 为什么每一步都这么慢，profile 显示 step 之间有很长的空闲。另外说一下：集群上我们组的 TPU 配额只有 64 个芯片，提交任务别超过这个数。"""),
        R("我先看一下训练循环。", "train.py", r"""    state = create_train_state(rng, cfg)
    p_train_step = jax.jit(train_step, donate_argnums=(0,))
    for step in range(cfg.total_steps):
        batch = next(train_iter)
        state, metrics = p_train_step(state, batch)
        loss_val = jax.device_get(metrics["loss"])
        lr_val = jax.device_get(metrics["lr"])
        writer.scalar("train/loss", loss_val, step)
        writer.scalar("train/lr", lr_val, step)
        if step % cfg.eval_every == 0:
            run_eval(state, eval_iter, writer, step)""", start=142, total=198),
        A(r"""问题在第 147、148 行：每一步都调用 `jax.device_get`，这会强制主机等待设备把这一步算完，把 JAX 的异步派发变成了同步执行，所以 profile 里 step 之间会出现空闲。

建议改成只在记录日志的步数上取回指标：

```python
for step in range(cfg.total_steps):
    batch = next(train_iter)
    state, metrics = p_train_step(state, batch)
    if step % cfg.log_every == 0:
        metrics = jax.device_get(metrics)   # 只在这里同步一次
        writer.scalar("train/loss", metrics["loss"], step)
        writer.scalar("train/lr", metrics["lr"], step)
```

另外 `configs/base.yaml` 里参数和激活都是 `float32`，显存占用比较大。"""),
        U(r"""好，改吧。还有，以后所有实验统一用 bf16 混合精度，fp32 太费显存了。王老师说 Adafactor 比 AdamW 好，不过我还没验证过。"""),
        E("", "train.py",
          r"""        loss_val = jax.device_get(metrics["loss"])
        lr_val = jax.device_get(metrics["lr"])
        writer.scalar("train/loss", loss_val, step)
        writer.scalar("train/lr", lr_val, step)""",
          r"""        if step % cfg.log_every == 0:
            host_metrics = jax.device_get(metrics)
            writer.scalar("train/loss", host_metrics["loss"], step)
            writer.scalar("train/lr", host_metrics["lr"], step)""", start=147),
        E("", "configs/base.yaml",
          r"""dtype: float32
param_dtype: float32""",
          r"""dtype: bfloat16        # activations / compute
param_dtype: float32   # master weights stay fp32""", start=7),
        B("先跑 50 步看看速度。", "python train.py --config configs/base.yaml --total_steps 50 --log_every 10 2>&1 | tail -7",
          r"""I0527 22:41:03.118 train.py:88] devices: 8 x TPU v4, mesh (data=8,)
WARNING:absl:Consider setting XLA_FLAGS=--xla_tpu_enable_async_collective_fusion=true for better overlap.
I0527 22:41:19.402 train.py:160] step 10  loss 10.412  step_time 291ms
I0527 22:41:22.310 train.py:160] step 20  loss 9.877  step_time 290ms
I0527 22:41:25.219 train.py:160] step 30  loss 9.341  step_time 291ms
I0527 22:41:28.131 train.py:160] step 40  loss 8.960  step_time 291ms
I0527 22:41:31.036 train.py:160] step 49  loss 8.702  step_time 290ms"""),
        A(r"""单步时间从原来的约 410ms 降到 290ms，主要来自去掉每步同步，bf16 也让激活显存降了大约 40%。loss 下降正常，和之前 fp32 的曲线在前 50 步基本重合。"""),
        U(r"""不错。预热先用 2000 步，跑个学习率 sweep 看看。"""),
        E("", "configs/sweep_lr.yaml",
          r"""warmup_steps: 1000""",
          r"""warmup_steps: 2000""", start=4),
        B("", "python launch.py --sweep configs/sweep_lr.yaml --chips 64",
          r"""[launch] sweep lr in [1e-4, 3e-4, 6e-4, 1e-3], 4 runs x 16 chips = 64 chips (quota 64)
[launch] submitted lm-sweep-lr-1e-4  -> job 771203
[launch] submitted lm-sweep-lr-3e-4  -> job 771204
[launch] submitted lm-sweep-lr-6e-4  -> job 771205
[launch] submitted lm-sweep-lr-1e-3  -> job 771206"""),
        A(r"""4 个 run 已提交，每个 16 个芯片，刚好用满 64 个芯片的配额。大概 40 分钟后可以看前 3k 步的曲线。"""),
        U(r"""要不要试试 FSDP？如果有 v5 的话可以把 batch 翻倍。"""),
        A(r"""目前模型是 1.3B 参数，8 卡数据并行下每张卡放得下完整的参数和优化器状态，FSDP 的主要收益是省显存，在这个规模上反而会多出 all-gather 通信开销，意义不大。等做到 6.7B 那一档再考虑比较合适。"""),
        B("看一下 sweep 的结果。", "python tools/summarize.py runs/lm-sweep-lr --at_step 3000",
          r"""run                 lr      warmup  loss@1k  loss@2k  loss@3k
lm-sweep-lr-1e-4    1e-4    2000    9.81     9.12     8.77
lm-sweep-lr-3e-4    3e-4    2000    9.64     8.95     8.41
lm-sweep-lr-6e-4    6e-4    2000    9.60     8.90     8.29
lm-sweep-lr-1e-3    1e-3    2000    9.58     8.93     8.33"""),
        U(r"""不对，预热改成 500 步吧，2000 步太慢了，前 3k 步 loss 基本不动。今天先把 eval 关掉省点时间。"""),
        E("", "configs/sweep_lr.yaml",
          r"""warmup_steps: 2000
eval_every: 1000""",
          r"""warmup_steps: 500
eval_every: 0   # 临时关闭""", start=4),
        A(r"""已修改：

- `train.py`：只在 `log_every` 的步数上同步取回指标，单步约 290ms。
- `configs/base.yaml`：计算用 bfloat16，主权重保留 fp32。
- `configs/sweep_lr.yaml`：预热步数已更新，eval 暂时关闭（`eval_every: 0`）。

需要的话我可以取消当前 4 个 job 并用新配置重新提交，仍然是 4 × 16 个芯片。"""),
    ],
    memories=[
        M("fact", "集群上组里的 TPU 配额只有 64 个芯片，提交任务不能超过这个数。", ["TPU", "配额"]),
        M("decision", "以后所有实验统一使用 bf16 混合精度。", ["bf16", "混合精度"]),
        M("decision", "学习率预热改为 500 步（2000 步太慢）。", ["预热", "500"]),
    ],
    traps=[
        "王老师说 Adafactor 比 AdamW 好",
        "Consider setting XLA_FLAGS=--xla_tpu_enable_async_collective_fusion=true for better overlap.",
        "预热先用 2000 步",
        "要不要试试 FSDP？",
        "如果有 v5 的话可以把 batch 翻倍",
        "今天先把 eval 关掉",
    ],
)

# ---------------------------------------------------------------- session-10 (pt)
session(
    name="session-10", lang="pt", date=(2025, 6, 3, 15),
    project="agência WordPress: plugin de cardápio para cliente (PHP, ACF)",
    cwd="/home/bia/clientes/padaria-aurora/wp-content", branch="feature/cardapio",
    turns=[
        U(r"""Oi! Preciso criar o custom post type 'Cardápio' pro site da Padaria Aurora. Regra da casa: as funções dos nossos plugins sempre levam o prefixo agx (de Agência X), tipo agx_register_cardapio. O plugin fica em plugins/agx-cardapio."""),
        GL("", "plugins/agx-*/agx-*.php", ["plugins/agx-eventos/agx-eventos.php", "plugins/agx-equipe/agx-equipe.php",
                                           "plugins/agx-depoimentos/agx-depoimentos.php"]),
        R("Vou usar o plugin de eventos como referência.", "plugins/agx-eventos/agx-eventos.php", r"""<?php
/**
 * Plugin Name: AGX Eventos
 * Description: CPT de eventos com campos ACF.
 * Version: 1.3.0
 * Author: Agência X
 */

defined('ABSPATH') || exit;

add_action('init', 'agx_register_eventos');

function agx_register_eventos() {
    register_post_type('agx_evento', [
        'labels'       => ['name' => 'Eventos', 'singular_name' => 'Evento'],
        'public'       => true,
        'has_archive'  => true,
        'show_in_rest' => true,
        'menu_icon'    => 'dashicons-calendar-alt',
        'supports'     => ['title', 'editor', 'thumbnail'],
        'rewrite'      => ['slug' => 'eventos'],
    ]);
}""", total=61),
        A(r"""O padrão está claro: header do plugin, `defined('ABSPATH') || exit;`, registro do CPT no `init` com função prefixada. Para o cardápio eu faria:

- CPT `agx_cardapio` com slug `cardapio`
- taxonomia `agx_categoria_cardapio` (Pães, Doces, Salgados, Bebidas)
- campos: preço, alergênicos, disponível hoje (sim/não)

Para os campos dá para seguir o plugin de eventos com ACF, ou registrar blocos próprios."""),
        U(r"""e se a gente fizesse blocos nativos do Gutenberg em vez de campos? não sei..."""),
        A(r"""Blocos nativos dão mais liberdade visual para quem edita, mas custam bem mais: build com `@wordpress/scripts`, React no editor, versionamento dos blocos e manutenção a cada release do WordPress. Para um cardápio com campos fixos (preço, alergênicos), campos estruturados são mais simples e garantem dados consistentes para o template e para o JSON da API."""),
        U(r"""bora de ACF Pro mesmo, o cliente já paga a licença e a equipe conhece. O cliente acha que a home tem que ter carrossel, mas isso é outra conversa"""),
        W("", "plugins/agx-cardapio/agx-cardapio.php", r"""<?php
/**
 * Plugin Name: AGX Cardápio
 * Description: CPT de itens do cardápio com campos ACF.
 * Version: 1.0.0
 * Author: Agência X
 */

defined('ABSPATH') || exit;

add_action('init', 'agx_register_cardapio');
add_action('acf/include_fields', 'agx_cardapio_fields');

function agx_register_cardapio() {
    register_post_type('agx_cardapio', [
        'labels'       => ['name' => 'Cardápio', 'singular_name' => 'Item do cardápio'],
        'public'       => true,
        'has_archive'  => true,
        'show_in_rest' => true,
        'menu_icon'    => 'dashicons-carrot',
        'supports'     => ['title', 'editor', 'thumbnail'],
        'rewrite'      => ['slug' => 'cardapio'],
    ]);
    register_taxonomy('agx_categoria_cardapio', 'agx_cardapio', [
        'label' => 'Categorias', 'hierarchical' => true, 'show_in_rest' => true,
    ]);
}

function agx_cardapio_fields() {
    acf_add_local_field_group([
        'key'      => 'group_agx_cardapio',
        'title'    => 'Detalhes do item',
        'fields'   => [
            ['key' => 'field_agx_preco', 'label' => 'Preço (R$)', 'name' => 'preco', 'type' => 'number', 'step' => '0.01'],
            ['key' => 'field_agx_alergenicos', 'label' => 'Alergênicos', 'name' => 'alergenicos', 'type' => 'checkbox',
             'choices' => ['gluten' => 'Glúten', 'lactose' => 'Lactose', 'ovo' => 'Ovo', 'castanhas' => 'Castanhas']],
            ['key' => 'field_agx_disponivel', 'label' => 'Disponível hoje', 'name' => 'disponivel_hoje', 'type' => 'true_false'],
        ],
        'location' => [[['param' => 'post_type', 'operator' => '==', 'value' => 'agx_cardapio']]],
    ]);
}
"""),
        B("", "wp plugin activate agx-cardapio --path=/home/bia/clientes/padaria-aurora",
          r"""PHP Deprecated:  Creation of dynamic property Agx_Equipe_Admin::$slug is deprecated in /home/bia/clientes/padaria-aurora/wp-content/plugins/agx-equipe/includes/class-admin.php on line 14
Plugin 'agx-cardapio' activated.
Success: Activated 1 of 1 plugins."""),
        A(r"""Plugin ativado. O `PHP Deprecated` vem do `agx-equipe` (propriedade dinâmica no PHP 8.2), não do plugin novo.

Agora o template do item. Vou criar `single-agx_cardapio.php` direto em `themes/astra/`, que é o tema ativo."""),
        U(r"""não!! nunca mexam no tema pai, sempre no child theme (astra-aurora). qualquer atualização do Astra apaga tudo"""),
        W("Certo, criando no child theme:", "themes/astra-aurora/single-agx_cardapio.php", r"""<?php
get_header();
while (have_posts()) : the_post();
    $preco       = get_field('preco');
    $alergenicos = get_field('alergenicos') ?: [];
    ?>
    <article <?php post_class('agx-cardapio-item'); ?>>
        <h1><?php the_title(); ?></h1>
        <?php the_post_thumbnail('large'); ?>
        <p class="agx-preco">R$ <?php echo esc_html(number_format_i18n((float) $preco, 2)); ?></p>
        <?php if ($alergenicos) : ?>
            <p class="agx-alergenicos">Contém: <?php echo esc_html(implode(', ', $alergenicos)); ?></p>
        <?php endif; ?>
        <?php the_content(); ?>
    </article>
<?php endwhile;
get_footer();
"""),
        B("", r"""wp rewrite flush --path=/home/bia/clientes/padaria-aurora && curl -s -o /dev/null -w "%{http_code}\n" https://aurora.local/cardapio/pao-de-queijo/""",
          r"""Success: Rewrite rules flushed.
200"""),
        A(r"""Pronto: `/cardapio/pao-de-queijo/` responde 200 com o template do child theme. Uma boa prática geral é sempre escapar a saída com esc_html() e sanitizar as entradas, por isso o template já usa `esc_html` no preço e nos alergênicos."""),
        U(r"""valeu. por enquanto deixa o WP_DEBUG ligado no staging, ainda tô caçando aquele warning"""),
        A(r"""Ok, não mexi no `wp-config.php` do staging; `WP_DEBUG` continua `true` lá. Quando terminar de caçar o warning, vale desligar antes de mostrar para o cliente, porque os avisos aparecem no front."""),
    ],
    memories=[
        M("convention", "As funções dos plugins da agência sempre levam o prefixo agx (ex.: agx_register_cardapio).", ["prefixo", "agx"]),
        M("preference", "Campos customizados são feitos com ACF Pro (o cliente já paga a licença e a equipe conhece), não com blocos nativos do Gutenberg.", ["ACF", "licença"]),
        M("antipattern", "Nunca mexer no tema pai; alterações vão sempre no child theme (astra-aurora).", ["tema", "pai"]),
    ],
    traps=[
        "e se a gente fizesse blocos nativos do Gutenberg em vez de campos?",
        "O cliente acha que a home tem que ter carrossel",
        "Creation of dynamic property Agx_Equipe_Admin::$slug is deprecated",
        "Uma boa prática geral é sempre escapar a saída com esc_html() e sanitizar as entradas",
        "por enquanto deixa o WP_DEBUG ligado no staging",
    ],
)

# ---------------------------------------------------------------- session-11
session(
    name="session-11", lang="en", date=(2025, 6, 12, 10),
    project="robotics: ROS 2 perception stack for warehouse AGVs (C++)",
    cwd="/home/robo/agv_ws/src/agv_stack", branch="perception/lidar-fusion",
    turns=[
        U(r"""the lidar fusion node isn't getting any /scan messages since I merged the driver update. can you check? we're on Humble btw, not Iron — the Jetsons are stuck on Ubuntu 22.04 so don't suggest anything Iron-only"""),
        B("", "ros2 topic info /scan --verbose | grep -E 'Node name|Reliability|Durability|Endpoint type'",
          r"""Node name: sick_tim_driver
Endpoint type: PUBLISHER
  Reliability: BEST_EFFORT
  Durability: VOLATILE
Node name: lidar_fusion
Endpoint type: SUBSCRIPTION
  Reliability: RELIABLE
  Durability: VOLATILE"""),
        B("", "grep -h 'incompatible' ~/.ros/log/latest/*.log | head -3",
          r"""[WARN] [1749721384.512233901] [lidar_fusion]: New publisher discovered on topic '/scan', offering incompatible QoS. No messages will be received from it. Last incompatible policy: RELIABILITY
[WARN] [1749721384.512901377] [sick_tim_driver]: New subscription discovered on topic '/scan', requesting incompatible QoS. No messages will be sent to it. Last incompatible policy: RELIABILITY"""),
        R("", "lidar_fusion/src/lidar_fusion_node.cpp", r"""LidarFusionNode::LidarFusionNode(const rclcpp::NodeOptions & options)
: Node("lidar_fusion", options)
{
  scan_sub_ = create_subscription<sensor_msgs::msg::LaserScan>(
    "/scan", rclcpp::QoS(10),
    std::bind(&LidarFusionNode::onScan, this, std::placeholders::_1));
  cloud_sub_ = create_subscription<sensor_msgs::msg::PointCloud2>(
    "/camera/depth/points", rclcpp::QoS(5),
    std::bind(&LidarFusionNode::onCloud, this, std::placeholders::_1));
  fused_pub_ = create_publisher<sensor_msgs::msg::PointCloud2>("/fusion/points", 10);
}""", start=14, total=162),
        A(r"""It's a QoS mismatch. The updated `sick_tim_driver` now publishes `/scan` as **BEST_EFFORT**, but `lidar_fusion` subscribes with `rclcpp::QoS(10)`, which defaults to **RELIABLE**. A reliable subscriber can't match a best-effort publisher, so DDS silently drops the connection (that's the `incompatible QoS` warning in the log).

Fix in the constructor:

```cpp
scan_sub_ = create_subscription<sensor_msgs::msg::LaserScan>(
  "/scan", rclcpp::SensorDataQoS(),
  std::bind(&LidarFusionNode::onScan, this, std::placeholders::_1));
cloud_sub_ = create_subscription<sensor_msgs::msg::PointCloud2>(
  "/camera/depth/points", rclcpp::SensorDataQoS(),
  std::bind(&LidarFusionNode::onCloud, this, std::placeholders::_1));
```

`SensorDataQoS` is best-effort, volatile, keep-last 5, which matches both drivers and is available on Humble."""),
        U(r"""yep. convention for us: every sensor topic subscription uses SensorDataQoS, never reliable, the drivers all publish best effort"""),
        E("", "lidar_fusion/src/lidar_fusion_node.cpp",
          r"""    "/scan", rclcpp::QoS(10),""", r"""    "/scan", rclcpp::SensorDataQoS(),""", start=18),
        E("", "lidar_fusion/src/lidar_fusion_node.cpp",
          r"""    "/camera/depth/points", rclcpp::QoS(5),""", r"""    "/camera/depth/points", rclcpp::SensorDataQoS(),""", start=21),
        B("", "cd ~/agv_ws && colcon build --packages-select lidar_fusion 2>&1 | tail -3 && source install/setup.bash && timeout 6 ros2 topic hz /fusion/points | tail -2",
          r"""Finished <<< lidar_fusion [24.1s]

Summary: 1 package finished [24.9s]
average rate: 9.981
	min: 0.097s max: 0.104s std dev: 0.00211s window: 50"""),
        A(r"""Fixed: `/fusion/points` is publishing at ~10 Hz again, matching the lidar's scan rate. Both subscribers in the node now use `SensorDataQoS()`."""),
        U(r"""could we use Zenoh instead of DDS for the fleet link at some point? Kenji says we should rewrite the planner in Rust too lol. anyway: I prefer composable nodes over standalone executables for anything in the perception pipeline — can you turn lidar_fusion into a component?"""),
        E("Sure. Registering the node as a component in CMake (the constructor already takes `NodeOptions`):", "lidar_fusion/CMakeLists.txt",
          r"""add_executable(lidar_fusion_node src/lidar_fusion_node.cpp src/main.cpp)
ament_target_dependencies(lidar_fusion_node rclcpp sensor_msgs pcl_conversions)""",
          r"""add_library(lidar_fusion_component SHARED src/lidar_fusion_node.cpp)
ament_target_dependencies(lidar_fusion_component rclcpp rclcpp_components sensor_msgs pcl_conversions)
rclcpp_components_register_node(lidar_fusion_component
  PLUGIN "agv::LidarFusionNode"
  EXECUTABLE lidar_fusion_node)""", start=22),
        W("", "agv_bringup/launch/perception.launch.py", r"""from launch import LaunchDescription
from launch_ros.actions import ComposableNodeContainer
from launch_ros.descriptions import ComposableNode


def generate_launch_description():
    container = ComposableNodeContainer(
        name="perception_container",
        namespace="",
        package="rclcpp_components",
        executable="component_container_mt",
        composable_node_descriptions=[
            ComposableNode(package="lidar_fusion", plugin="agv::LidarFusionNode", name="lidar_fusion"),
            ComposableNode(package="obstacle_grid", plugin="agv::ObstacleGridNode", name="obstacle_grid"),
        ],
        output="screen",
    )
    return LaunchDescription([container])
"""),
        B("", "cd ~/agv_ws && colcon build --packages-select lidar_fusion agv_bringup 2>&1 | tail -2 && timeout 8 ros2 launch agv_bringup perception.launch.py 2>&1 | grep -E 'Load|rate' | head -4",
          r"""Summary: 2 packages finished [31.7s]
[component_container_mt-1] [INFO] [1749722011.204118823] [perception_container]: Load Library: /home/robo/agv_ws/install/lidar_fusion/lib/liblidar_fusion_component.so
[component_container_mt-1] [INFO] [1749722011.219903114] [perception_container]: Found class: rclcpp_components::NodeFactoryTemplate<agv::LidarFusionNode>
[component_container_mt-1] [INFO] [1749722011.221877450] [perception_container]: Instantiate class: rclcpp_components::NodeFactoryTemplate<agv::LidarFusionNode>"""),
        A(r"""`lidar_fusion` now loads as a component in `perception_container`, next to `obstacle_grid`. The `lidar_fusion_node` executable still exists (generated by `rclcpp_components_register_node`) for debugging.

In general, it's worth turning on `use_intra_process_comms` for components in the same container to avoid serialization between them."""),
        U(r"""just disable the lidar node in the sim launch for now, gazebo keeps crashing on it"""),
        E("", "agv_bringup/launch/sim.launch.py",
          r"""    ld.add_action(lidar_fusion)""",
          r"""    # ld.add_action(lidar_fusion)  # disabled in sim for now: gazebo crash, see #231""", start=58),
        A(r"""Commented out in `sim.launch.py` with a note pointing at #231. Summary:

- `/scan` QoS mismatch fixed (`SensorDataQoS` on both sensor subscribers).
- `lidar_fusion` is a component and runs in `perception_container`.
- lidar fusion temporarily disabled in the sim launch only."""),
    ],
    memories=[
        M("fact", "The stack runs ROS 2 Humble, not Iron, because the Jetsons are stuck on Ubuntu 22.04.", ["Humble", "Jetsons"]),
        M("convention", "Every sensor topic subscription uses SensorDataQoS (best effort), never reliable.", ["SensorDataQoS", "subscription"]),
        M("preference", "Use composable nodes rather than standalone executables for anything in the perception pipeline.", ["composable", "perception"]),
    ],
    traps=[
        "No messages will be received from it.",
        "could we use Zenoh instead of DDS for the fleet link at some point?",
        "Kenji says we should rewrite the planner in Rust",
        "it's worth turning on `use_intra_process_comms` for components in the same container",
        "just disable the lidar node in the sim launch for now",
    ],
)

# ---------------------------------------------------------------- session-12
session(
    name="session-12", lang="en", date=(2025, 6, 11, 9),
    project="fintech: daily SEPA/card settlement reconciliation job (Python)",
    cwd="/srv/dev/recon-engine", branch="feature/sepa-matching",
    turns=[
        U(r"""the SEPA matcher is leaving ~300 unmatched lines every morning. context: the bank files come in as MT940 around 06:30 CET, and the Adyen settlement report lands later, ~09:00, so the first run never sees Adyen data"""),
        R("", "recon/matchers/sepa.py", r"""def match_sepa(bank_lines: pd.DataFrame, ledger: pd.DataFrame) -> MatchResult:
    # Match bank statement lines to ledger entries (exact remittance ref + amount).
    merged = bank_lines.merge(
        ledger,
        left_on=["remittance_ref", "amount_minor"],
        right_on=["payment_ref", "amount_minor"],
        how="left",
        indicator=True,
    )
    matched = merged[merged["_merge"] == "both"]
    unmatched = bank_lines[~bank_lines["line_id"].isin(matched["line_id"])]
    return MatchResult(matched=matched, unmatched=unmatched)""", start=21, total=64),
        B("", "python -m recon.run --date 2025-06-11 --source sepa --dry-run 2>&1 | tail -5",
          r"""2025-06-11 09:14:02 INFO  loaded 4,118 MT940 lines from bank/2025-06-11/EUR-1.sta
2025-06-11 09:14:02 INFO  loaded 4,094 ledger entries (sepa)
2025-06-11 09:14:03 INFO  matched 3,806 lines
2025-06-11 09:14:03 WARNING 312 unmatched lines; consider increasing amount_tolerance to 0.05
2025-06-11 09:14:03 INFO  dry run, nothing written"""),
        A(r"""The matcher joins on `remittance_ref` + amount. Looking at a sample of the 312 unmatched lines, 280 of them have the remittance info truncated or reformatted by the payer's bank (e.g. `INV 2025/0612` vs `INV-2025-0612`), but they all carry an **EndToEndId** in field `:86:`/`?20`, which our ledger stores as `e2e_id`.

Two options:

**Option 1:** key on the EndToEndId first, falling back to amount plus value date when it's missing.

**Option 2:** match purely on amount and value date within a ±1 business-day window.

Option 1 is precise wherever the payer's bank passes the ID through (most SEPA CTs do). Option 2 would match more lines but is ambiguous whenever several customers pay the same amount on the same day."""),
        U(r"""ok go with your first option. option 2 would pair up every 49.99 subscription with every other one. and one hard rule: we never auto-resolve a break above one cent, anything bigger goes to the manual review queue. that warning about the tolerance is nonsense btw"""),
        E("", "recon/matchers/sepa.py",
          r"""    merged = bank_lines.merge(
        ledger,
        left_on=["remittance_ref", "amount_minor"],
        right_on=["payment_ref", "amount_minor"],
        how="left",
        indicator=True,
    )
    matched = merged[merged["_merge"] == "both"]""",
          r"""    by_id = bank_lines.dropna(subset=["end_to_end_id"]).merge(
        ledger, left_on=["end_to_end_id"], right_on=["e2e_id"], how="inner")
    rest = bank_lines[~bank_lines["line_id"].isin(by_id["line_id"])]
    by_amount = rest.merge(ledger, on=["amount_minor", "value_date"], how="inner")
    by_amount = by_amount.drop_duplicates(subset=["line_id"], keep=False)  # ambiguous -> manual
    matched = pd.concat([by_id, by_amount], ignore_index=True)
    diff = (matched["amount_minor_bank"] - matched["amount_minor_ledger"]).abs()
    matched, breaks = matched[diff <= 1], matched[diff > 1]""", start=23),
        B("", "pytest tests/matchers -q 2>&1 | tail -8",
          r"""F.......                                                                 [100%]
=================================== FAILURES ===================================
________________________ test_match_by_end_to_end_id ________________________
    def test_match_by_end_to_end_id(bank_fixture, ledger_fixture):
>       res = match_sepa(bank_fixture, ledger_fixture)
E       KeyError: 'end_to_end_id'
recon/matchers/sepa.py:24: KeyError
1 failed, 7 passed in 0.92s""", err=1),
        E("The MT940 parser exposes the field as `eref`, not `end_to_end_id`. Mapping it at parse time:", "recon/parsers/mt940.py",
          r"""        "remittance_ref": tx.data.get("purpose"),""",
          r"""        "remittance_ref": tx.data.get("purpose"),
        "end_to_end_id": tx.data.get("eref") or None,""", start=48),
        B("", "pytest tests/matchers -q 2>&1 | tail -2",
          r"""........                                                                 [100%]
8 passed in 0.88s"""),
        B("", "python -m recon.run --date 2025-06-11 --source sepa --dry-run 2>&1 | grep -E 'matched|breaks|unmatched'",
          r"""2025-06-11 09:31:40 INFO  matched 4,077 lines (3,912 by e2e id, 165 by amount+date)
2025-06-11 09:31:40 INFO  breaks > 0.01: 3 -> manual_review
2025-06-11 09:31:40 INFO  unmatched 38 lines"""),
        A(r"""From 312 unmatched down to 38, plus 3 breaks routed to `manual_review` (differences of 2.50, 0.40 and 12.00 EUR). The remaining 38 are lines without an EndToEndId whose amount+date is ambiguous, so they're left for a human too, which is what we want."""),
        U(r"""nice. the auditors (KPMG) said last year that 'every manual override needs four-eyes approval' — not sure that applies to us though. do we need to handle chargebacks in this matcher too? skip the EUR-2 file for today's run, the bank resent it"""),
        A(r"""Chargebacks shouldn't go through this matcher: they arrive in the Adyen settlement report as `Chargeback` / `ChargebackReversed` records with their own PSP reference, and they reverse a card payment rather than settle a SEPA transfer. They belong in the card matcher, which already handles `Refund` records in a similar way.

Running today's job without EUR-2:"""),
        B("", "python -m recon.run --date 2025-06-11 --source sepa --exclude-file EUR-2.sta 2>&1 | tail -3",
          r"""2025-06-11 09:36:12 INFO  skipping bank/2025-06-11/EUR-2.sta (--exclude-file)
2025-06-11 09:36:13 INFO  matched 4,077 lines, 3 breaks -> manual_review, 38 unmatched
2025-06-11 09:36:13 INFO  wrote out/2025-06-11/sepa_recon_v1.parquet"""),
        A(r"""Today's run is written (`out/2025-06-11/sepa_recon_v1.parquet`), with EUR-2 excluded. Changes on the branch: the ID-first matcher, the `eref` mapping in the MT940 parser, and the one-cent break threshold routing to `manual_review`."""),
    ],
    memories=[
        M("fact", "Bank statements arrive as MT940 around 06:30 CET while the Adyen settlement report lands around 09:00, so the first run never sees Adyen data.", ["MT940", "Adyen"]),
        M("decision", "SEPA matching keys on the EndToEndId first and falls back to amount plus value date only when it is missing (option 1 from the assistant's proposal, accepted by the user; keywords are in the assistant's proposal).", ["EndToEndId", "value"], src="assistant"),
        M("convention", "Never auto-resolve a break above one cent; anything bigger goes to the manual review queue.", ["cent", "manual"]),
    ],
    traps=[
        "consider increasing amount_tolerance to 0.05",
        "match purely on amount and value date within a ±1 business-day window",
        "every manual override needs four-eyes approval",
        "do we need to handle chargebacks in this matcher too?",
        "skip the EUR-2 file for today's run",
    ],
)

# ---------------------------------------------------------------- session-13
session(
    name="session-13", lang="en", date=(2025, 7, 1, 16),
    project="Rust embedded motor controller on STM32G474 (embassy)",
    cwd="/home/ines/src/motorctl-fw", branch="main",
    turns=[
        U(r"""the firmware went over 128K after I added the CAN task and flash is only 128K on this part. can you look at what's bloating it"""),
        B("", "cargo size --release -- -A | head -8",
          r"""    Finished `release` profile [optimized + debuginfo] target(s) in 0.21s
motorctl-fw  :
section             size        addr
.vector_table        472   0x8000000
.text             119844   0x80001d8
.rodata            12608   0x801d5fc
.data                 56  0x20000000
.bss               18436  0x20000038"""),
        B("", "cargo bloat --release -n 8",
          r"""    Analyzing target/thumbv7em-none-eabihf/release/motorctl-fw

File  .text    Size       Crate Name
2.9%  12.1%  14.5KiB        core core::fmt::Formatter::pad_integral
2.1%   8.8%  10.6KiB        core core::fmt::write
1.6%   6.7%   8.0KiB        core <core::fmt::builders::DebugStruct>::field
1.2%   5.0%   6.0KiB   motorctl_fw motorctl_fw::can::can_task::{{closure}}
1.0%   4.2%   5.1KiB embassy_stm32 embassy_stm32::can::fdcan::Can::new
0.8%   3.3%   4.0KiB   motorctl_fw motorctl_fw::foc::run
0.7%   2.9%   3.5KiB        core core::fmt::num::imp::fmt_u64"""),
        A(r"""About 39 KiB of `.text` is `core::fmt` machinery (`pad_integral`, `write`, `DebugStruct`, `fmt_u64`). That normally only gets linked in when something formats with `core::fmt` at runtime — a `format!`/`write!` into a buffer, a `{:?}` on a struct, or panic messages with formatting. The rest of the firmware logs through defmt, which doesn't pull this in, so the new CAN code is the likely culprit."""),
        U(r"""yeah we use defmt for all logging, no core::fmt formatting in firmware, it's the binary size killer. someone added a format! in can.rs didn't they"""),
        G("", r"format!|write!\(|\{:\?\}", r"""src/can.rs:57:        let msg = format!("node {} status {:?}", frame.id(), status);
src/can.rs:58:        let _ = write!(&mut self.diag_buf, "{}", msg);
src/can.rs:91:            warn!("unknown frame {:?}", frame.id());""", path="src"),
        E("Lines 57–58 build a string with `format!` just to push it into the diag buffer, and line 91 is fine (`warn!` is the defmt macro). Replacing 57–58 with a binary diag record:", "src/can.rs",
          r"""        let msg = format!("node {} status {:?}", frame.id(), status);
        let _ = write!(&mut self.diag_buf, "{}", msg);""",
          r"""        let rec = DiagRecord::NodeStatus { node: frame.id().as_raw(), status: status as u8 };
        self.diag_buf.push(rec.encode());
        defmt::debug!("node {=u16} status {}", rec.node(), status);""", start=57),
        B("", "cargo build --release 2>&1 | grep -A9 '^error'",
          r"""error[E0308]: mismatched types
  --> src/can.rs:59:25
   |
59 |         self.diag_buf.push(rec.encode());
   |                       ---- ^^^^^^^^^^^^ expected `[u8; 8]`, found `Result<[u8; 8], EncodeError>`
   |                       |
   |                       arguments to this method are incorrect
   |
help: consider using `Result::expect` to unwrap the `Result<[u8; 8], EncodeError>` value, panicking if the value is a `Result::Err`""",
          err=101),
        A(r"""`DiagRecord::encode()` returns a `Result` because the status enum can in theory hold a value that doesn't fit the 8-byte record. The quickest fix is to call `.unwrap()` on the result, since `NodeStatus` always fits."""),
        U(r"""no, never unwrap in the fw crate, if it can fail handle it — a panic here means the motor stays energized until the watchdog bites"""),
        E("", "src/can.rs",
          r"""        self.diag_buf.push(rec.encode());""",
          r"""        match rec.encode() {
            Ok(bytes) => self.diag_buf.push(bytes),
            Err(e) => {
                self.stats.diag_encode_errors += 1;
                defmt::warn!("diag encode failed: {}", e);
            }
        }""", start=59),
        B("", "cargo build --release 2>&1 | tail -1 && cargo size --release -- -A | grep -E '^\\.(text|rodata)'",
          r"""    Finished `release` profile [optimized + debuginfo] target(s) in 11.84s
.text              88912   0x80001d8
.rodata             9740   0x8015fe8"""),
        A(r"""Down from 132,452 to 98,652 bytes of flash (`.text` + `.rodata`), so ~30 KiB of headroom on the 128K part; `core::fmt` is gone from `cargo bloat` entirely. Encode errors are counted and logged with defmt instead of panicking.

It's generally a good idea to enable `lto = "fat"` and `opt-level = "z"` in the release profile for firmware, though you already have `lto = true`.

One more thing I noticed: the FDCAN bus-off recovery bug you worked around in `can.rs:112` is fixed upstream, but not in the latest embassy-stm32 on crates.io yet."""),
        U(r"""can embassy do USB DFU btw? not now. and let's just pin embassy to a git rev in Cargo.toml, crates.io releases lag too far behind for the G4 fixes. oh and comment out the tachometer task for now, it's not wired on this board"""),
        E("", "Cargo.toml",
          r"""embassy-stm32 = { version = "0.2.0", features = ["stm32g474re", "time-driver-any", "exti"] }
embassy-executor = { version = "0.7.0", features = ["arch-cortex-m", "executor-thread"] }""",
          r"""embassy-stm32 = { git = "https://github.com/embassy-rs/embassy", rev = "3b9ae1e", features = ["stm32g474re", "time-driver-any", "exti"] }
embassy-executor = { git = "https://github.com/embassy-rs/embassy", rev = "3b9ae1e", features = ["arch-cortex-m", "executor-thread"] }""", start=14),
        E("", "src/main.rs",
          r"""    spawner.must_spawn(tacho_task(p.TIM3, p.PB4));""",
          r"""    // spawner.must_spawn(tacho_task(p.TIM3, p.PB4)); // not wired on this board yet""", start=71),
        B("", "cargo update -p embassy-stm32 -p embassy-executor 2>&1 | tail -2 && cargo build --release 2>&1 | tail -1",
          r"""    Updating git repository `https://github.com/embassy-rs/embassy`
     Locking 9 packages to latest compatible versions
    Finished `release` profile [optimized + debuginfo] target(s) in 52.37s"""),
        A(r"""Builds against embassy `3b9ae1e`. On USB DFU: yes, `embassy-boot` + `embassy-usb-dfu` support it on the G4, but it needs a bootloader partition, so it's a bigger change for later.

Summary: `can.rs` no longer uses `core::fmt` and handles encode errors, embassy crates come from a pinned git rev, and the tachometer task is commented out."""),
    ],
    memories=[
        M("convention", "All firmware logging uses defmt; no core::fmt formatting in firmware because it blows up binary size.", ["defmt", "size"]),
        M("antipattern", "Never unwrap in the fw crate; anything that can fail must be handled, since a panic leaves the motor energized until the watchdog resets.", ["unwrap", "fw"]),
        M("decision", "Pin embassy to a git rev in Cargo.toml because crates.io releases lag too far behind for the G4 fixes.", ["pin", "lag"]),
    ],
    traps=[
        "consider using `Result::expect` to unwrap the `Result<[u8; 8], EncodeError>` value",
        "The quickest fix is to call `.unwrap()` on the result",
        "It's generally a good idea to enable `lto = \"fat\"` and `opt-level = \"z\"` in the release profile for firmware",
        "can embassy do USB DFU btw?",
        "comment out the tachometer task for now",
    ],
)

# ---------------------------------------------------------------- session-14
session(
    name="session-14", lang="en", date=(2025, 7, 8, 11),
    project="Django monolith: extracting billing into a separate service",
    cwd="/home/deploy/code/harbor-monolith", branch="billing-extraction",
    turns=[
        U(r"""we're starting to pull billing out of the monolith. plan is the strangler approach: new billing endpoints go into the billing service, the monolith only gets bug fixes in billing/ from here on. first step — new Invoice tables in the service. let's use UUID primary keys for the new tables"""),
        TD("", [
            {"content": "Review monolith billing models", "status": "in_progress", "activeForm": "Reviewing monolith billing models"},
            {"content": "Create invoices app models in billing_service", "status": "pending", "activeForm": "Creating invoices models"},
            {"content": "Backfill migration for invoice numbers", "status": "pending", "activeForm": "Writing backfill migration"},
            {"content": "Run migrations and tests", "status": "pending", "activeForm": "Running migrations and tests"}]),
        R("", "harbor/billing/models.py", r"""class Invoice(models.Model):
    account = models.ForeignKey("accounts.Account", on_delete=models.PROTECT, related_name="invoices")
    number = models.CharField(max_length=32, unique=True)
    issued_at = models.DateTimeField()
    due_at = models.DateTimeField()
    currency = models.CharField(max_length=3, default="EUR")
    total_minor = models.BigIntegerField()
    status = models.CharField(max_length=16, choices=InvoiceStatus.choices, default=InvoiceStatus.DRAFT)


class InvoiceLine(models.Model):
    invoice = models.ForeignKey(Invoice, on_delete=models.CASCADE, related_name="lines")
    description = models.CharField(max_length=255)
    quantity = models.DecimalField(max_digits=12, decimal_places=3)
    unit_price_minor = models.BigIntegerField()""", start=41, total=118),
        W("Creating the service-side models, mirroring the monolith's fields but without the cross-app FK to `accounts` (the service only stores `account_id`).", "billing_service/invoices/models.py", r"""import uuid

from django.db import models


class Invoice(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    account_id = models.BigIntegerField(db_index=True)
    number = models.CharField(max_length=32, unique=True)
    issued_at = models.DateTimeField()
    due_at = models.DateTimeField()
    currency = models.CharField(max_length=3, default="EUR")
    total_minor = models.BigIntegerField()
    status = models.CharField(max_length=16, default="draft")


class InvoiceLine(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    invoice = models.ForeignKey(Invoice, on_delete=models.CASCADE, related_name="lines")
    description = models.CharField(max_length=255)
    quantity = models.DecimalField(max_digits=12, decimal_places=3)
    unit_price_minor = models.BigIntegerField()
"""),
        B("", "cd billing_service && python manage.py makemigrations invoices",
          r"""Migrations for 'invoices':
  invoices/migrations/0001_initial.py
    - Create model Invoice
    - Create model InvoiceLine"""),
        W("Next, a data migration that backfills invoice numbers in the new `INV-YYYY-NNNNNN` format for imported rows:", "billing_service/invoices/migrations/0002_backfill_numbers.py", r"""from django.db import migrations


def backfill_numbers(apps, schema_editor):
    Invoice = apps.get_model("invoices", "Invoice")
    for i, inv in enumerate(Invoice.objects.filter(number="").order_by("issued_at"), start=1):
        inv.number = f"INV-{inv.issued_at:%Y}-{i:06d}"
        inv.save(update_fields=["number"])


class Migration(migrations.Migration):
    dependencies = [("invoices", "0001_initial")]
    operations = [migrations.RunPython(backfill_numbers)]
"""),
        U(r"""rule of thumb here: every migration has to be reversible, so always give RunPython a reverse function, even if it's just a noop"""),
        E("", "billing_service/invoices/migrations/0002_backfill_numbers.py",
          r"""    operations = [migrations.RunPython(backfill_numbers)]""",
          r"""    operations = [migrations.RunPython(backfill_numbers, reverse_code=migrations.RunPython.noop)]""", start=13),
        B("Checking it applies and rolls back cleanly:", "cd billing_service && python manage.py migrate invoices && python manage.py migrate invoices 0001 && python manage.py migrate invoices",
          r"""Operations to perform:
  Apply all migrations: invoices
Running migrations:
  Applying invoices.0001_initial... OK
  Applying invoices.0002_backfill_numbers... OK
Operations to perform:
  Target specific migration: 0001_initial, from invoices
Running migrations:
  Rendering model states... DONE
  Unapplying invoices.0002_backfill_numbers... OK
Operations to perform:
  Apply all migrations: invoices
Running migrations:
  Applying invoices.0002_backfill_numbers... OK"""),
        A(r"""Forward, backward and forward again all work. For reference, the Django docs put it this way: "RunPython operations are not reversible unless you supply reverse_code", and `migrate` raises `IrreversibleError` when you try to roll back past one."""),
        U(r"""could we just use django-ninja for the service API instead of DRF? Marco from reporting says Postgres views would solve the whole extraction anyway, which, no."""),
        A(r"""django-ninja would work technically (pydantic schemas, async views, OpenAPI out of the box), but the monolith's billing API is DRF and the existing serializers, permission classes and the `harbor-auth` token authentication are all DRF-based. Reusing them in the service keeps the response shapes byte-identical while traffic is being shifted, which matters for a strangler setup. I'd keep DRF at least until the monolith's billing views are retired."""),
        U(r"""hmm actually no, stick with bigint ids for the invoice tables, not UUIDs — the reporting team's joins all assume integer keys and I don't want to break their warehouse sync. and for today just --fake the 0002 on staging, ops will run the backfill tonight"""),
        E("", "billing_service/invoices/models.py",
          r"""class Invoice(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)""",
          r"""class Invoice(models.Model):
    id = models.BigAutoField(primary_key=True)""", start=6),
        E("", "billing_service/invoices/models.py",
          r"""class InvoiceLine(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)""",
          r"""class InvoiceLine(models.Model):
    id = models.BigAutoField(primary_key=True)""", start=17),
        B("Since 0001 hasn't left this branch, I'm regenerating it instead of stacking an ALTER migration:", "cd billing_service && python manage.py migrate invoices zero && rm invoices/migrations/0001_initial.py && python manage.py makemigrations invoices && python manage.py migrate invoices",
          r"""Operations to perform:
  Unapply all migrations: invoices
Running migrations:
  Unapplying invoices.0002_backfill_numbers... OK
  Unapplying invoices.0001_initial... OK
Migrations for 'invoices':
  invoices/migrations/0001_initial.py
    - Create model Invoice
    - Create model InvoiceLine
Running migrations:
  Applying invoices.0001_initial... OK
  Applying invoices.0002_backfill_numbers... OK"""),
        B("", "cd billing_service && pytest -q 2>&1 | tail -2 && DJANGO_SETTINGS_MODULE=billing_service.settings.staging python manage.py migrate invoices 0002 --fake",
          r"""14 passed in 2.17s
Operations to perform:
  Target specific migration: 0002_backfill_numbers, from invoices
Running migrations:
  Applying invoices.0002_backfill_numbers... FAKED"""),
        A(r"""Done:

- `invoices` app in `billing_service` with `Invoice` and `InvoiceLine` on `BigAutoField` primary keys; `account_id` is a plain indexed integer instead of a cross-service FK.
- `0002_backfill_numbers` now has a no-op rollback and round-trips cleanly.
- 0002 is faked on staging, so the real backfill still needs to run tonight (`python manage.py backfill_invoice_numbers` or re-running the function from a shell).
- 14 tests pass. The `uuid` import in `models.py` is gone too."""),
    ],
    memories=[
        M("decision", "Billing is extracted with the strangler approach: new billing endpoints go into the billing service and the monolith only gets bug fixes in billing/.", ["strangler", "endpoints"]),
        M("convention", "Every migration must be reversible; always give RunPython a reverse function, even if it's just a noop.", ["reverse", "noop"]),
        M("decision", "Invoice tables use bigint ids rather than UUIDs because the reporting team's joins assume integer keys.", ["bigint", "reporting"]),
    ],
    traps=[
        "let's use UUID primary keys for the new tables",
        "RunPython operations are not reversible unless you supply reverse_code",
        "could we just use django-ninja for the service API instead of DRF?",
        "Marco from reporting says Postgres views would solve the whole extraction anyway",
        "for today just --fake the 0002 on staging",
    ],
)

# ---------------------------------------------------------------- session-15
session(
    name="session-15", lang="en", date=(2025, 7, 17, 14),
    project="data-science notebook: churn cohort analysis (pandas, jupytext)",
    cwd="/home/jovyan/work/churn-analysis", branch="main",
    turns=[
        U(r"""can you clean up notebooks/02_churn_cohorts.py (it's the jupytext pair of the ipynb)? the cohort retention numbers look way too high for early 2023"""),
        R("", "notebooks/02_churn_cohorts.py", r"""# %% [markdown]
# ## Monthly cohorts

# %%
CHURN_WINDOW_DAYS = 30
events = pd.read_parquet(DATA / "events.parquet")
first_seen = events.groupby("user_id")["ts"].min().dt.to_period("M").rename("cohort")
active = events.merge(first_seen, on="user_id")
active["month"] = active["ts"].dt.to_period("M")
sessions = active[active["event"] == "session_start"]
cohort_sizes = sessions.groupby("cohort")["user_id"].nunique()
retention = (sessions.groupby(["cohort", "month"])["user_id"].count()
             .div(cohort_sizes, level="cohort").unstack())

# %%
recent = retention[retention.index >= "2023-01"]
recent["avg"] = recent.mean(axis=1)
recent.plot(legend=False)""", start=22, total=61),
        B("", r"""python -c "import pandas as pd; e=pd.read_parquet('data/events.parquet'); s=e[e.event=='session_start']; print((s.groupby(s.ts.dt.to_period('M')).size()/s.groupby(s.ts.dt.to_period('M')).user_id.nunique()).loc['2022-11':'2023-05'].round(2).to_string())" """,
          r"""ts
2022-11    8.93
2022-12    9.12
2023-01    9.31
2023-02    9.07
2023-03    4.71
2023-04    4.64
2023-05    4.58"""),
        A(r"""Two issues:

1. **Sessions per user halve from March 2023** (≈9.1 → ≈4.6) with no product change that would explain it, so something was inflating the earlier numbers.
2. The retention cell uses `["user_id"].count()` instead of `.nunique()`, so every extra `session_start` row counts as extra retention. Combined with (1), early-2023 cohorts look about twice as sticky as they are."""),
        U(r"""ah right, known thing: the events table double-counts sessions before March 2023 because of the SDK bug (the one that fired session_start twice). filter those out or dedupe. is churn defined as 30 or 60 days here?"""),
        A(r"""The notebook uses 30 days (`CHURN_WINDOW_DAYS = 30` on line 26). I'll dedupe rather than filter, so the pre-March cohorts stay in the analysis: drop `session_start` events that share `user_id` + `session_id` and keep the first, then count unique users per cell:

```python
sessions = (active[active["event"] == "session_start"]
            .sort_values("ts")
            .drop_duplicates(subset=["user_id", "session_id"], keep="first"))
retention = (sessions.groupby(["cohort", "month"])["user_id"].nunique()
             .div(cohort_sizes, level="cohort").unstack())
```"""),
        E("", "notebooks/02_churn_cohorts.py",
          r"""sessions = active[active["event"] == "session_start"]
cohort_sizes = sessions.groupby("cohort")["user_id"].nunique()
retention = (sessions.groupby(["cohort", "month"])["user_id"].count()""",
          r"""# dedupe duplicated session_start events (pre-2023-03 tracking issue)
sessions = (active[active["event"] == "session_start"]
            .sort_values("ts")
            .drop_duplicates(subset=["user_id", "session_id"], keep="first"))
cohort_sizes = sessions.groupby("cohort")["user_id"].nunique()
retention = (sessions.groupby(["cohort", "month"])["user_id"].nunique()""", start=31),
        B("", "jupytext --to notebook --execute notebooks/02_churn_cohorts.py 2>&1 | grep -A2 Warning",
          r"""/tmp/ipykernel_4121/2714085312.py:2: SettingWithCopyWarning: 
A value is trying to be set on a copy of a slice from a DataFrame.
Try using .loc[row_indexer,col_indexer] = value instead"""),
        A(r"""It runs; early-2023 month-1 retention dropped from 71% to 38%, in line with later cohorts. The `SettingWithCopyWarning` comes from `recent["avg"] = ...` on a filtered slice; I'll take an explicit `.copy()` and also give the plot proper styling."""),
        E("", "notebooks/02_churn_cohorts.py",
          r"""recent = retention[retention.index >= "2023-01"]
recent["avg"] = recent.mean(axis=1)
recent.plot(legend=False)""",
          r"""recent = retention[retention.index >= "2023-01"].copy()
recent["avg"] = recent.mean(axis=1)
ax = recent.drop(columns="avg").T.plot(legend=False, alpha=0.4)
ax.set_title("Monthly cohort retention")""", start=41),
        U(r"""plots: seaborn whitegrid style please, and always label the axes with units, 'Retention (%)' not 'ret'. my manager thinks we should just throw XGBoost at it, but first the descriptive stuff"""),
        E("", "notebooks/02_churn_cohorts.py",
          r"""ax = recent.drop(columns="avg").T.plot(legend=False, alpha=0.4)
ax.set_title("Monthly cohort retention")""",
          r"""sns.set_theme(style="whitegrid")
ax = (recent.drop(columns="avg").T * 100).plot(legend=False, alpha=0.4)
ax.set_title("Monthly cohort retention")
ax.set_xlabel("Calendar month")
ax.set_ylabel("Retention (%)")""", start=43),
        B("", "jupytext --to notebook --execute notebooks/02_churn_cohorts.py 2>&1 | tail -2",
          r"""[jupytext] Reading notebooks/02_churn_cohorts.py in format py
[jupytext] Executing notebook with kernel python3
[jupytext] Updating notebook metadata with '{"kernelspec": {"name": "python3", "language": "python"}}'
[jupytext] Writing notebooks/02_churn_cohorts.ipynb (destination file replaced [use --update to preserve cell outputs and ids])"""),
        A(r"""Executes cleanly with no warnings, and the retention chart now has the whitegrid theme, a percentage y-axis and labelled axes. As a general habit, it's good to pin random seeds in any notebook that samples data, although this one doesn't sample."""),
        U(r"""if we had the billing data we could do LTV per cohort, but we don't. last thing — notebooks must run top to bottom, so restart & run all before committing. then commit"""),
        B("Executing both paired notebooks in a fresh kernel from the top, then committing.",
          "jupytext --to notebook --execute --set-kernel python3 notebooks/01_load.py notebooks/02_churn_cohorts.py >/dev/null 2>&1 && echo exec-ok && git add notebooks/ && git commit -m 'Dedupe pre-2023-03 session_start events; restyle retention plot' && git log --oneline -1",
          r"""exec-ok
[main 5c0a9e1] Dedupe pre-2023-03 session_start events; restyle retention plot
 2 files changed, 31 insertions(+), 19 deletions(-)
5c0a9e1 Dedupe pre-2023-03 session_start events; restyle retention plot"""),
        A(r"""Committed as `5c0a9e1` after a clean top-to-bottom run of both notebooks in a fresh kernel. Summary: deduped `session_start`, switched retention to unique users, fixed the copy warning, and restyled the chart with labelled axes."""),
    ],
    memories=[
        M("fact", "The events table double-counts sessions before March 2023 because of an SDK bug that fired session_start twice, so those must be deduped or filtered.", ["SDK", "double"]),
        M("preference", "Plots use the seaborn whitegrid style and axes are always labelled with units.", ["whitegrid", "units"]),
        M("convention", "Notebooks must run top to bottom: restart and run all before committing.", ["restart", "committing"]),
    ],
    traps=[
        "is churn defined as 30 or 60 days here?",
        "A value is trying to be set on a copy of a slice from a DataFrame.",
        "my manager thinks we should just throw XGBoost at it",
        "it's good to pin random seeds in any notebook that samples data",
        "if we had the billing data we could do LTV per cohort",
    ],
)

# ---------------------------------------------------------------- session-16
session(
    name="session-16", lang="en", date=(2025, 8, 5, 19),
    project="browser extension (Manifest V3, TypeScript) for Chrome and Firefox",
    cwd="/Users/nora/dev/tabtamer", branch="feat/settings-persistence",
    turns=[
        U(r"""settings aren't persisting in Firefox, chrome works fine. heads up: the Firefox build uses an event page (background scripts), not a service worker — see manifest.firefox.json"""),
        R("", "src/background/settings.ts", r"""import type { Settings } from "../types";

const DEFAULTS: Settings = { maxTabs: 30, rules: [], theme: "system" };

export async function loadSettings(): Promise<Settings> {
  const stored = await chrome.storage.sync.get("settings");
  return { ...DEFAULTS, ...(stored.settings ?? {}) };
}

export async function saveSettings(s: Settings): Promise<void> {
  await chrome.storage.sync.set({ settings: s });
}""", total=12),
        R("", "manifest.firefox.json", r"""{
  "manifest_version": 3,
  "name": "TabTamer",
  "version": "2.3.1",
  "background": { "scripts": ["background.js"], "type": "module" },
  "permissions": ["storage", "tabs"],
  "options_ui": { "page": "options.html", "open_in_tab": true },
  "action": { "default_popup": "popup.html" }
}""", total=9),
        A(r"""Found the cause. The Firefox manifest has no `browser_specific_settings.gecko.id`. Without an explicit add-on ID, Firefox gives temporary/unsigned builds a random ID on each load and `storage.sync` throws *"The storage API will not work with a temporary addon ID"*, so `saveSettings` rejects and nothing persists. There's also a size issue: users with big rule lists are close to the 100 KB `storage.sync` quota (the largest test profile is 91 KB).

Two options:

**Option 1:** add a `browser_specific_settings.gecko.id` and keep `chrome.storage.sync` so settings follow the user across devices.

**Option 2:** keep everything in `chrome.storage.local` and add an explicit export/import of settings as JSON from the options page.

Option 1 is the smaller change; option 2 removes the quota ceiling entirely but users lose automatic cross-device sync."""),
        U(r"""ok go with your second option, sync quota is tiny and our rule lists blow through it. MDN literally says 'storage.sync is not intended for storing large amounts of data' anyway"""),
        E("", "src/background/settings.ts",
          r"""  const stored = await chrome.storage.sync.get("settings");""",
          r"""  const stored = await chrome.storage.local.get("settings");""", start=6),
        E("", "src/background/settings.ts",
          r"""  await chrome.storage.sync.set({ settings: s });""",
          r"""  await chrome.storage.local.set({ settings: s });""", start=11),
        W("Adding the JSON export/import used by the options page:", "src/options/exportImport.ts", r"""import { loadSettings, saveSettings } from "../background/settings";
import { parseSettings } from "../schema";

export async function exportSettings(): Promise<void> {
  const settings = await loadSettings();
  const blob = new Blob([JSON.stringify({ version: 1, settings }, null, 2)], { type: "application/json" });
  const url = URL.createObjectURL(blob);
  const a = Object.assign(document.createElement("a"), { href: url, download: "tabtamer-settings.json" });
  a.click();
  URL.revokeObjectURL(url);
}

export async function importSettings(file: File): Promise<void> {
  const parsed = parseSettings(JSON.parse(await file.text()));
  await saveSettings(parsed.settings);
}
"""),
        B("", "pnpm build:firefox && pnpm exec web-ext lint -s dist/firefox --output text 2>&1 | tail -8",
          r"""Validation Summary:

errors          0
notices         0
warnings        1

WARNINGS:

UNSAFE_VAR_ASSIGNMENT  Unsafe assignment to innerHTML  Due to both security and performance concerns, this may not be set using dynamic values which have not been adequately sanitized.  options.js  212"""),
        A(r"""The build works; web-ext flags one `innerHTML` assignment in the options page (the rules table renders user-entered patterns with `innerHTML`). I'll switch that to `textContent`.

While reading `options.html` I also noticed it loads Chart.js from `https://cdn.jsdelivr.net/npm/chart.js@4.4.1` for the stats tab."""),
        U(r"""oh god, rip that out. no remote code — never load scripts from a CDN, the chrome web store rejected us once already for exactly that. bundle it"""),
        E("", "public/options.html",
          r"""    <script src="https://cdn.jsdelivr.net/npm/chart.js@4.4.1/dist/chart.umd.min.js"></script>
    <script type="module" src="options.js"></script>""",
          r"""    <script type="module" src="options.js"></script>""", start=11),
        B("Chart.js is now imported from the npm package in `src/options/stats.ts` and bundled, and the rules table uses `textContent`. Rebuilding both targets:",
          "pnpm add chart.js@4.4.1 >/dev/null && pnpm build && pnpm exec web-ext lint -s dist/firefox --output text 2>&1 | grep -E '^(errors|warnings)'",
          r"""errors          0
warnings        0"""),
        A(r"""Clean lint on Firefox, and the Chrome build passes `pnpm test` too. The options page now has **Export settings** / **Import settings** buttons.

For the upcoming import-from-URL feature, the extension will need host access to whatever URL the user enters."""),
        U(r"""should we bother with Safari at some point? anyway for the import-from-URL thing: ask for optional host permissions at runtime, never put it in host_permissions in the manifest, reviewers flag broad host perms. just hardcode the test URL for now so I can try it"""),
        E("", "src/options/importFromUrl.ts",
          r"""export async function importFromUrl(url: string): Promise<void> {""",
          r"""const TEST_URL = "https://gist.githubusercontent.com/nora-k/8f1e2c/raw/tabtamer-test.json"; // TEMP

export async function importFromUrl(url: string = TEST_URL): Promise<void> {
  const origin = new URL(url).origin + "/*";
  const granted = await chrome.permissions.request({ origins: [origin] });
  if (!granted) throw new Error("Permission to read " + origin + " was not granted");""", start=4),
        A(r"""Done. `importFromUrl` requests access to just that origin when the user triggers the import (both manifests list `"optional_host_permissions": ["https://*/*"]` so the request is allowed, and nothing is granted up front). The test gist URL is hardcoded as a temporary default.

On Safari: it would need the Xcode wrapper and a separate App Store review, so probably only worth it if users ask."""),
    ],
    memories=[
        M("fact", "The Firefox build uses an event page (background scripts), not a service worker.", ["Firefox", "event"]),
        M("decision", "Settings are stored in chrome.storage.local with an explicit JSON export/import instead of storage.sync (option 2 from the assistant's proposal, accepted by the user; keywords are in the assistant's proposal).", ["local", "export"], src="assistant"),
        M("antipattern", "No remote code: never load scripts from a CDN; the Chrome Web Store already rejected the extension once for it.", ["CDN", "rejected"]),
        M("convention", "Host access is requested as optional host permissions at runtime, never declared in the manifest's host_permissions.", ["optional", "runtime"]),
    ],
    traps=[
        "add a `browser_specific_settings.gecko.id` and keep `chrome.storage.sync` so settings follow the user across devices",
        "storage.sync is not intended for storing large amounts of data",
        "Due to both security and performance concerns, this may not be set using dynamic values which have not been adequately sanitized.",
        "should we bother with Safari at some point?",
        "just hardcode the test URL for now",
    ],
)

# ---------------------------------------------------------------- session-17
session(
    name="session-17", lang="en", date=(2025, 8, 19, 12),
    project="open-source Go CLI for deployments (homebrew-distributed)",
    cwd="/home/kb/src/shipit", branch="refactor/flags",
    turns=[
        U(r"""the shipit binary is 14MB and the homebrew folks are complaining. also `shipit deploy --dryRun` vs `shipit rollback --dry-run` is inconsistent, users keep tripping on it. take a look at cmd/"""),
        GL("", "cmd/**/*.go", ["cmd/root.go", "cmd/deploy.go", "cmd/rollback.go", "cmd/status.go", "cmd/version.go"]),
        B("", "go build -o /tmp/shipit . && ls -lh /tmp/shipit | awk '{print $5}' && go version -m /tmp/shipit | grep -cE '^\\s+dep' && go version -m /tmp/shipit | grep -E 'cobra|viper|pflag'",
          r"""14M
41
	dep	github.com/spf13/cobra	v1.8.1	h1:e5/vxKd/rZsfSJMUX1agtjeTDf+qv1/JdBF8gg5k9ZM=
	dep	github.com/spf13/pflag	v1.0.5	h1:iy+VFUOCP1a+8yFto/drg2CJ5u0yRoB7fZw3DKv/JXA=
	dep	github.com/spf13/viper	v1.19.0	h1:RWq5SEjt8o25SROyN3z2OrDB9l7RPd3lwTWU8EcEdRI="""),
        A(r"""41 module dependencies, most of them pulled in transitively by **viper** (HCL, TOML, INI, etcd/consul remote config…) and **cobra**. shipit only has 4 subcommands (`deploy`, `rollback`, `status`, `version`) and reads a single JSON config file, so viper's remote-config and format support is dead weight.

The flag inconsistency comes from `deploy.go` declaring `dryRun` in camelCase while `rollback.go` uses `dry-run`."""),
        U(r"""let's just drop cobra and go with the stdlib flag package, we only have 4 subcommands. viper too. and flags are kebab-case, long names only unless it's something everyone knows like -v"""),
        R("", "cmd/deploy.go", r"""var deployCmd = &cobra.Command{
	Use:   "deploy [service]",
	Short: "Deploy a service",
	Args:  cobra.ExactArgs(1),
	RunE: func(cmd *cobra.Command, args []string) error {
		dryRun, _ := cmd.Flags().GetBool("dryRun")
		env := viper.GetString("env")
		if err := deploy(args[0], env, dryRun); err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		return nil
	},
}

func init() {
	deployCmd.Flags().Bool("dryRun", false, "print the plan without applying")
	deployCmd.Flags().StringP("env", "e", "staging", "target environment")
	rootCmd.AddCommand(deployCmd)
}""", start=12, total=31),
        W("Rewriting `deploy` on top of `flag.FlagSet` (the other subcommands follow the same shape):", "cmd/deploy.go", r"""package cmd

import (
	"flag"
	"fmt"
	"os"
)

func runDeploy(args []string) int {
	fs := flag.NewFlagSet("deploy", flag.ContinueOnError)
	dryRun := fs.Bool("dry-run", false, "print the plan without applying")
	env := fs.String("env", "staging", "target environment")
	verbose := fs.Bool("v", false, "verbose output")
	fs.Parse(args)
	if fs.NArg() != 1 {
		fmt.Println("usage: shipit deploy [--dry-run] [--env ENV] SERVICE")
		return 1
	}
	if err := deploy(fs.Arg(0), *env, *dryRun, *verbose); err != nil {
		fmt.Println("error:", err)
		return 2
	}
	return 0
}
"""),
        B("", "golangci-lint run ./cmd/... 2>&1 | head -4",
          r"""cmd/deploy.go:14:10: Error return value of `fs.Parse` is not checked (errcheck)
	fs.Parse(args)
	        ^
1 issues:"""),
        E("", "cmd/deploy.go",
          r"""	fs.Parse(args)""",
          r"""	if err := fs.Parse(args); err != nil {
		return 1
	}""", start=14),
        B("", "go mod tidy && go build -ldflags='-s -w' -o /tmp/shipit . && ls -lh /tmp/shipit | awk '{print $5}'",
          "5.1M"),
        A(r"""14 MB → 5.1 MB with cobra, pflag and viper gone (and `-s -w`, which goreleaser already passes in release builds). All four subcommands use `flag.FlagSet` with kebab-case flags; `-v` is the only short one.

I noticed `deploy.go` prints errors with `fmt.Println`, so they end up mixed into normal output. As a rule of thumb, CLIs should follow the POSIX utility conventions for exit codes and output streams."""),
        U(r"""good. and errors go to stderr, never stdout — people pipe shipit's output into jq. exit 1 for user error, 2 for internal. a user on #88 wants YAML config support, not doing that. what if we added a TUI mode later?"""),
        E("", "cmd/deploy.go",
          r"""		fmt.Println("usage: shipit deploy [--dry-run] [--env ENV] SERVICE")
		return 1
	}
	if err := deploy(fs.Arg(0), *env, *dryRun, *verbose); err != nil {
		fmt.Println("error:", err)
		return 2""",
          r"""		fmt.Fprintln(os.Stderr, "usage: shipit deploy [--dry-run] [--env ENV] SERVICE")
		return 1
	}
	if err := deploy(fs.Arg(0), *env, *dryRun, *verbose); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		return 2""", start=17),
        B("Applied the same to `rollback`, `status` and `main.go`. Running the tests:", "go test ./... 2>&1 | tail -4",
          r"""ok  	github.com/kbrandt/shipit	0.412s
ok  	github.com/kbrandt/shipit/cmd	0.288s
ok  	github.com/kbrandt/shipit/internal/plan	0.097s
?   	github.com/kbrandt/shipit/internal/version	[no test files]"""),
        A(r"""All green, including a new `TestErrorsGoToStderr` that runs `deploy` with a bad service and asserts nothing is written to the output stream that `jq` would read.

On a TUI mode: it would bring back a large dependency (bubbletea + lipgloss is ~2 MB), so it'd be worth keeping behind a separate binary if it ever happens. CI is red on the Windows job, though: the runner image fails before our tests start."""),
        U(r"""skip the windows job in CI for now, the runner image is broken this week"""),
        E("", ".github/workflows/ci.yml",
          r"""        os: [ubuntu-latest, macos-latest, windows-latest]""",
          r"""        # windows-latest temporarily removed: runner image broken (re-add next week)
        os: [ubuntu-latest, macos-latest]""", start=14),
        A(r"""Windows is out of the CI matrix with a comment to re-add it. Summary: cobra/viper replaced by `flag`, binary 5.1 MB, consistent kebab-case flags, errors on stderr with exit codes 1/2."""),
    ],
    memories=[
        M("decision", "Drop cobra (and viper) and use the stdlib flag package for shipit's subcommands.", ["cobra", "stdlib"]),
        M("preference", "CLI flags are kebab-case, long names only unless a short form is universally known like -v.", ["kebab", "long"]),
        M("convention", "Errors go to stderr, never stdout (users pipe output into jq); exit 1 for user errors and 2 for internal errors.", ["stderr", "stdout"]),
    ],
    traps=[
        "Error return value of `fs.Parse` is not checked (errcheck)",
        "As a rule of thumb, CLIs should follow the POSIX utility conventions for exit codes and output streams.",
        "a user on #88 wants YAML config support",
        "what if we added a TUI mode later?",
        "skip the windows job in CI for now",
    ],
)

# ---------------------------------------------------------------- session-18
session(
    name="session-18", lang="en", date=(2025, 9, 2, 10),
    project="infrastructure-as-code repo (Terraform, AWS, Atlantis)",
    cwd="/home/ops/infra-live", branch="restructure-state",
    turns=[
        U(r"""I want to restructure this repo. right now it's envs/dev, envs/staging, envs/prod as folders but they all share one backend. let's just keep a single state file for all three envs and use workspaces? idk. first show me the backend config"""),
        R("", "envs/prod/backend.tf", r"""terraform {
  backend "s3" {
    bucket         = "acme-tfstate"
    key            = "infra-live/terraform.tfstate"
    region         = "eu-central-1"
    dynamodb_table = "acme-tf-locks"
    encrypt        = true
  }
}""", total=9),
        B("", "for e in dev staging prod; do printf '%s: ' $e; (cd envs/$e && terraform state list 2>/dev/null | wc -l); done; cd envs/prod && terraform workspace list",
          r"""dev: 412
staging: 412
prod: 412
* default"""),
        A(r"""All three folders point at the same key `infra-live/terraform.tfstate`, so they're literally the same state: 412 resources covering every environment, one `default` workspace. Every `plan` in `envs/dev` refreshes and could modify prod resources, and all three share one DynamoDB lock, so a long prod plan blocks dev work."""),
        U(r"""context: prod DB is in Frankfurt (eu-central-1), DR snapshots get copied to Ireland (eu-west-1). should we use Terragrunt for this?"""),
        A(r"""Terragrunt would help with keeping backend blocks DRY (one `remote_state` block generating per-env keys), but it's another tool in the pipeline and Atlantis needs the terragrunt wrapper configured. With three environments, plain per-folder `backend.tf` files are only a few duplicated lines. I'd start without it.

On structure, the two realistic options are workspaces in one backend key (what you suggested) or a separate backend key per environment."""),
        U(r"""actually no — split the state per environment, one backend key per env. a bad plan in dev should never be able to touch prod"""),
        W("", "envs/prod/backend.tf", r"""terraform {
  backend "s3" {
    bucket         = "acme-tfstate"
    key            = "infra-live/prod/terraform.tfstate"
    region         = "eu-central-1"
    dynamodb_table = "acme-tf-locks"
    encrypt        = true
  }
}
"""),
        B("Same change for dev and staging (keys `infra-live/dev/…` and `infra-live/staging/…`). Migrating dev first, then removing the other environments' resources from its copy of the state:",
          "cd envs/dev && terraform init -migrate-state -force-copy -input=false 2>&1 | tail -3 && terraform state list | grep -vE '^module\\.(dev|shared_dev)' | xargs -n50 terraform state rm | tail -1",
          r"""Successfully configured the backend "s3"! Terraform will automatically
use this backend unless the backend configuration changes.
Terraform has been successfully initialized!
Removed 50 resource instance(s)."""),
        B("", "tfsec envs/prod --no-color 2>&1 | head -9",
          r"""Result #1 HIGH Bucket does not have encryption enabled
────────────────────────────────────────────────────────────────────────────────
  modules/exports/main.tf:3-6
────────────────────────────────────────────────────────────────────────────────
    3  ┌ resource "aws_s3_bucket" "exports" {
    6  └ }
────────────────────────────────────────────────────────────────────────────────
          ID aws-s3-enable-bucket-encryption
  Resolution Configure bucket encryption"""),
        A(r"""Dev is migrated and only holds its own 138 resources. tfsec flags the `exports` bucket in prod; that one predates this change and uses a separate `aws_s3_bucket_server_side_encryption_configuration` resource that tfsec doesn't follow across modules, so it's a false positive.

For prod, the quickest way to finish the migration is to run `terraform init -migrate-state` and then `terraform apply` from here so the removed resources are reconciled."""),
        U(r"""don't. never terraform apply from a laptop against prod — prod only goes through Atlantis on the PR. the security team's old wiki says use one account per team but that's outdated, ignore it if you see it"""),
        E("Understood, I'll leave prod state alone and wire the per-env projects into Atlantis instead.", "atlantis.yaml",
          r"""projects:
  - name: infra-live
    dir: envs/prod
    autoplan:
      when_modified: ["**/*.tf", "../../modules/**/*.tf"]""",
          r"""projects:
  - name: dev
    dir: envs/dev
    autoplan:
      when_modified: ["*.tf", "../../modules/**/*.tf"]
  - name: staging
    dir: envs/staging
    autoplan:
      when_modified: ["*.tf", "../../modules/**/*.tf"]
  - name: prod
    dir: envs/prod
    apply_requirements: [approved, mergeable]
    autoplan:
      when_modified: ["*.tf", "../../modules/**/*.tf"]""", start=2),
        B("", "git status --short && git diff --stat",
          r""" M atlantis.yaml
 M envs/dev/backend.tf
 M envs/prod/backend.tf
 M envs/staging/backend.tf
 atlantis.yaml           | 14 ++++++++++++--
 envs/dev/backend.tf     |  2 +-
 envs/prod/backend.tf    |  2 +-
 envs/staging/backend.tf |  2 +-
 4 files changed, 16 insertions(+), 4 deletions(-)"""),
        A(r"""Changes are ready for a PR. Staging and prod state still need migrating; the prod migration should run through an Atlantis project with the new key, not from here."""),
        U(r"""for now just -target the rds module in staging when you test, the rest can wait"""),
        B("", "cd envs/staging && terraform init -migrate-state -force-copy -input=false >/dev/null && terraform plan -target=module.rds -no-color 2>&1 | tail -4",
          r"""module.rds.aws_db_instance.main: Refreshing state... [id=acme-staging-pg]
No changes. Your infrastructure matches the configuration.

Warning: Resource targeting is in effect"""),
        A(r"""Staging state is migrated and a targeted plan of `module.rds` shows no changes, so the migration didn't disturb the database. Summary:

- per-environment backend keys for dev, staging and prod
- dev and staging state migrated and pruned; prod left for Atlantis
- `atlantis.yaml` now has one project per environment, prod requires approval"""),
    ],
    memories=[
        M("fact", "The prod database is in Frankfurt (eu-central-1) and DR snapshots are copied to Ireland (eu-west-1).", ["Frankfurt", "Ireland"]),
        M("decision", "Terraform state is split per environment with one backend key per env, so a bad plan in dev can never touch prod.", ["split", "environment"]),
        M("antipattern", "Never terraform apply from a laptop against prod; prod changes only go through Atlantis on the PR.", ["Atlantis", "laptop"]),
    ],
    traps=[
        "let's just keep a single state file for all three envs and use workspaces?",
        "should we use Terragrunt for this?",
        "Resolution Configure bucket encryption",
        "the security team's old wiki says use one account per team",
        "for now just -target the rds module in staging when you test",
    ],
)


if __name__ == "__main__":
    sys.exit(main())
