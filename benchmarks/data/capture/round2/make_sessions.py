#!/usr/bin/env python3
"""Generate held-out capture test sessions and their gold labels.

Writes session-01.jsonl ... session-14.jsonl (Claude Code transcript JSONL)
and gold.jsonl next to this file, then checks them.

Python 3.11, standard library only. Deterministic: every run writes
byte-identical files (ids and timestamps come from a seeded RNG).

    python3 make_sessions.py          # write + check
    python3 make_sessions.py --check  # only check the files already written
"""
import datetime as dt
import json
import os
import random
import re
import sys
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
B62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
SESSIONS = []


def numbered(text, start=1):
    """Render file text the way Claude Code's Read tool does (cat -n style)."""
    return "\n".join(f"{i:>6}\u2192{line}" for i, line in enumerate(text.split("\n"), start))


def edited(path, snippet, start):
    return ("The file " + path + " has been updated. Here's the result of running `cat -n` "
            "on a snippet of the edited file:\n" + numbered(snippet, start))


def created(path):
    return "File created successfully at: " + path


class Session:
    def __init__(self, num, lang, cwd, branch, start, version="2.0.27",
                 model="claude-sonnet-4-5-20250929"):
        self.num = num
        self.name = f"session-{num:02d}.jsonl"
        self.lang = lang
        self.rng = random.Random(7919 * num + 17)
        self.cwd = cwd
        self.branch = branch
        self.version = version
        self.model = model
        self.sid = self._uuid()
        self.t = dt.datetime.fromisoformat(start)
        self.entries = []
        self.memories = []   # (entry index, type, text, keywords)
        self.traps = []
        self.parent = None
        SESSIONS.append(self)

    # -- ids / time ---------------------------------------------------------
    def _uuid(self):
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def _rid(self, prefix, n):
        return prefix + "".join(self.rng.choice(B62) for _ in range(n))

    def _ts(self, lo, hi):
        self.t += dt.timedelta(seconds=self.rng.uniform(lo, hi))
        return self.t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{self.t.microsecond // 1000:03d}Z"

    def _base(self, typ):
        return {"parentUuid": self.parent, "isSidechain": False, "userType": "external",
                "cwd": self.cwd, "sessionId": self.sid, "version": self.version,
                "gitBranch": self.branch, "type": typ}

    def _finish(self, e, ts):
        u = self._uuid()
        e["uuid"] = u
        e["timestamp"] = ts
        self.entries.append(e)
        self.parent = u
        return len(self.entries) - 1

    def _mems(self, idx, mems):
        for typ, text, kws in mems:
            self.memories.append((idx, typ, text, list(kws)))

    # -- entries --------------------------------------------------------------
    def user(self, text, mems=()):
        e = self._base("user")
        e["message"] = {"role": "user", "content": text}
        idx = self._finish(e, self._ts(45, 150 + len(text) / 2))
        self._mems(idx, mems)

    def asst(self, text, tools=(), mems=()):
        """tools: list of (name, input, output) or (name, input, output, is_error)."""
        e = self._base("assistant")
        content = []
        if text:
            content.append({"type": "text", "text": text})
        ids = []
        for t in tools:
            tid = self._rid("toolu_01", 22)
            ids.append(tid)
            content.append({"type": "tool_use", "id": tid, "name": t[0], "input": t[1]})
        out_tok = max(24, len(text) // 4 + sum(len(json.dumps(t[1])) // 4 for t in tools))
        e["message"] = {
            "id": self._rid("msg_01", 22), "type": "message", "role": "assistant",
            "model": self.model, "content": content,
            "stop_reason": "tool_use" if tools else "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": self.rng.randint(3, 12),
                      "cache_creation_input_tokens": self.rng.randint(300, 4200),
                      "cache_read_input_tokens": 14000 + 900 * len(self.entries) + self.rng.randint(0, 800),
                      "output_tokens": out_tok, "service_tier": "standard"}}
        e["requestId"] = self._rid("req_011C", 20)
        idx = self._finish(e, self._ts(8, 30 + len(text) / 12))
        self._mems(idx, mems)
        if tools:
            r = self._base("user")
            blocks = []
            for tid, t in zip(ids, tools):
                b = {"tool_use_id": tid, "type": "tool_result", "content": t[2]}
                if len(t) > 3 and t[3]:
                    b["is_error"] = True
                blocks.append(b)
            r["message"] = {"role": "user", "content": blocks}
            r["toolUseResult"] = {"type": "text"}
            self._finish(r, self._ts(2, 25))

    def trap(self, desc):
        self.traps.append(desc)

    # -- output -------------------------------------------------------------
    def write(self):
        with open(os.path.join(HERE, self.name), "w", encoding="utf-8") as f:
            for e in self.entries:
                f.write(json.dumps(e, ensure_ascii=False) + "\n")

    def gold(self):
        return {"session": self.name, "language": self.lang,
                "memories": [{"type": t, "text": x, "keywords": k} for _, t, x, k in self.memories],
                "not_memories": list(self.traps)}


# tool input helpers
def Read(path):
    return {"file_path": path}


def Edit(path, old, new):
    return {"file_path": path, "old_string": old, "new_string": new}


def Write(path, content):
    return {"file_path": path, "content": content}


def Bash(cmd, desc):
    return {"command": cmd, "description": desc}


def Grep(pattern, path, **kw):
    d = {"pattern": pattern, "path": path, "output_mode": "content", "-n": True}
    d.update(kw)
    return d


# =============================================================================
# session-01  Rails marina bookings: authorization bug -> Pundit
# =============================================================================
def s01():
    root = "/home/dana/tidepool"
    S = Session(1, "en", root, "fix/berth-edit-authz", "2026-03-03T08:41:12.310")
    ctrl = r'''class BerthsController < ApplicationController
  before_action :authenticate_staff!
  load_and_authorize_resource only: [:index, :show]

  def index
    @berths = @berths.where(marina: current_staff.marina).order(:code)
  end

  def show
  end

  def edit
    @berth = Berth.find(params[:id])
  end

  def update
    @berth = Berth.find(params[:id])
    if @berth.update(berth_params)
      redirect_to @berth, notice: "Berth updated"
    else
      render :edit, status: :unprocessable_entity
    end
  end

  private

  def berth_params
    params.require(:berth).permit(:code, :length_m, :beam_m, :nightly_rate, :shore_power, :notes)
  end
end'''
    ability = r'''class Ability
  include CanCan::Ability

  def initialize(staff)
    return unless staff

    if staff.admin?
      can :manage, :all
    elsif staff.harbour_master?
      can :manage, Berth
      can :manage, Booking, marina_id: staff.marina_id
    else
      can :read, Berth, marina_id: staff.marina_id
      can :manage, Booking, marina_id: staff.marina_id
    end
  end
end'''
    S.user("Port Whitby reported this morning that their harbour staff could edit berths that belong to "
           "Amble marina. Authorization in this app is all over the place. Can you look at how "
           "BerthsController checks access?")
    S.asst("I'll start with the controller and see which authorization gem is actually loaded.",
           [("Read", Read(f"{root}/app/controllers/berths_controller.rb"), numbered(ctrl)),
            ("Grep", Grep("cancan", f"{root}/Gemfile.lock"),
             "Gemfile.lock:112:    cancancan (3.5.0)\nGemfile.lock:301:  cancancan (~> 3.5)")])
    S.asst("CanCanCan is in use, but `load_and_authorize_resource` only covers `index` and `show`. "
           "Let me look at the ability definition and what the README says about it.",
           [("Read", Read(f"{root}/app/models/ability.rb"), numbered(ability)),
            ("Bash", Bash("grep -n -A5 '## Authorization' README.md", "Find authorization section in README"),
             "42:## Authorization\n43-\n44-We use CanCanCan for authorization. All rules live in `app/models/ability.rb`.\n"
             "45-We decided to keep a single Ability class for the whole app so the rules are\n"
             "46-easy to audit in one place.\n47-")])
    S.trap("README tool output 'We use CanCanCan ... We decided to keep a single Ability class' — stale doc text")
    S.asst(r'''Found it. There are two separate holes, and either one alone explains the Port Whitby report:

1. **`edit` and `update` are never authorized.** `load_and_authorize_resource only: [:index, :show]` skips them, and both actions do a bare `Berth.find(params[:id])`. Any signed-in staff member can `PATCH /berths/:id` for any berth in any marina.
2. **Harbour masters get `can :manage, Berth` with no marina condition.** Even if we authorized `update`, a harbour master at Port Whitby would still pass for an Amble berth.

The minimal fix inside CanCanCan would be:

```ruby
# app/models/ability.rb
elsif staff.harbour_master?
  can :manage, Berth, marina_id: staff.marina_id
  can :manage, Booking, marina_id: staff.marina_id

# app/controllers/berths_controller.rb
load_and_authorize_resource
```

That closes the bug today. The bigger problem is structural: every controller opts in with its own `only:` list, and the single `Ability` class already mixes three roles across two models. As we add `Invoice`, `Waitlist` and `Crew` it will keep growing and it's easy to forget an action, which is exactly what happened here.

The two common alternatives:

- **Pundit** — one plain Ruby policy class per model (`BerthPolicy#update?`), plus a `Scope` class for index queries. You call `authorize @berth` explicitly, and `after_action :verify_authorized` makes a missing check raise in dev and test.
- **ActionPolicy** — same per-model idea as Pundit, with extras: rule aliases, cached checks, scoping matchers, failure reasons for i18n.

I can do the minimal CanCanCan fix now and leave the structural question for later, or start moving berths over. What would you like?''')
    S.user("what if we used ActionPolicy instead? I've heard it's faster and a couple of people at Ruby Manor liked it")
    S.trap("'what if we used ActionPolicy instead?' — hypothetical question; ActionPolicy rejected in the next message")
    S.asst(r'''ActionPolicy is faster in the sense that it caches rule results per request, which helps when a view checks the same rule on hundreds of records (e.g. a berth grid with an "edit" button on each row). Its other features are real too:

- `alias_rule :edit?, to: :update?` so you don't repeat yourself
- `authorized_scope` with named scope types
- failure reasons you can turn into user-facing messages

The cost is more concepts and more configuration, and a smaller ecosystem. Pundit is ~300 lines of code you can read in an afternoon; policies are POROs and tests are plain RSpec:

```ruby
class BerthPolicy < ApplicationPolicy
  def update?
    staff.admin? || (staff.harbour_master? && record.marina_id == staff.marina_id)
  end

  class Scope < Scope
    def resolve
      staff.admin? ? scope.all : scope.where(marina_id: staff.marina_id)
    end
  end
end
```

For an app this size, with a berth list of maybe 200 rows, I doubt the caching matters. Either would work; Pundit is the smaller step away from what you have.''')
    S.user("Nah, ActionPolicy is more than we need. ok let's do Pundit for authorization, one policy per model, "
           "and we rip CanCanCan out as we touch each controller. Start with berths.",
           mems=[("decision", "Use Pundit for authorization (one policy per model); replace CanCanCan controller by controller, not ActionPolicy.",
                  ["Pundit", "authorization"])])
    policy = r'''class BerthPolicy < ApplicationPolicy
  def index?
    true
  end

  def show?
    same_marina? || staff.admin?
  end

  def update?
    staff.admin? || (staff.harbour_master? && same_marina?)
  end
  alias_method :edit?, :update?

  class Scope < Scope
    def resolve
      staff.admin? ? scope.all : scope.where(marina_id: staff.marina_id)
    end
  end

  private

  def same_marina?
    record.marina_id == staff.marina_id
  end
end'''
    S.asst("Adding the gem and generating the base policy first.",
           [("Edit", Edit(f"{root}/Gemfile", 'gem "cancancan", "~> 3.5"', 'gem "cancancan", "~> 3.5" # TODO: remove once all controllers use Pundit\ngem "pundit", "~> 2.4"'),
             edited(f"{root}/Gemfile", 'gem "devise", "~> 4.9"\ngem "cancancan", "~> 3.5" # TODO: remove once all controllers use Pundit\ngem "pundit", "~> 2.4"\ngem "pagy", "~> 8.0"', 27)),
            ("Bash", Bash("bundle install --quiet && bin/rails g pundit:install", "Install pundit and generate ApplicationPolicy"),
             "      create  app/policies/application_policy.rb")])
    S.asst("Now the berth policy and the controller.",
           [("Write", Write(f"{root}/app/policies/berth_policy.rb", policy), created(f"{root}/app/policies/berth_policy.rb")),
            ("Edit", Edit(f"{root}/app/controllers/berths_controller.rb",
                          "  load_and_authorize_resource only: [:index, :show]\n\n  def index\n    @berths = @berths.where(marina: current_staff.marina).order(:code)\n  end",
                          "  after_action :verify_authorized, except: :index\n  after_action :verify_policy_scoped, only: :index\n\n  def index\n    @berths = policy_scope(Berth).order(:code)\n  end"),
             edited(f"{root}/app/controllers/berths_controller.rb",
                    "class BerthsController < ApplicationController\n  before_action :authenticate_staff!\n  before_action :set_berth, only: [:show, :edit, :update]\n  after_action :verify_authorized, except: :index\n  after_action :verify_policy_scoped, only: :index\n\n  def index\n    @berths = policy_scope(Berth).order(:code)\n  end", 1)),
            ("Read", Read(f"{root}/db/schema.rb"),
             numbered('  create_table "berths", force: :cascade do |t|\n    t.string "code", null: false\n    t.bigint "marina_id"\n    t.decimal "length_m", precision: 5, scale: 2\n    t.decimal "beam_m", precision: 5, scale: 2\n    t.float "nightly_rate"\n    t.boolean "shore_power", default: false\n    t.text "notes"\n    t.datetime "created_at", null: false\n    t.datetime "updated_at", null: false\n    t.index ["marina_id"], name: "index_berths_on_marina_id"\n  end', 88))])
    S.asst(r'''`BerthsController` now goes through `BerthPolicy`: `set_berth` calls `authorize @berth`, and `index` uses `policy_scope(Berth)`. The two `after_action` checks mean any new action that forgets to authorize will raise in development and test instead of silently allowing access.

While I was in `schema.rb` I noticed something unrelated but worth flagging:

```ruby
t.float "nightly_rate"
```

A float for a price will produce things like `42.900000000000006` once you multiply by nights and add VAT. The booking totals in `BookingQuote#total` already round in three different places, which looks like a workaround for exactly that.''')
    S.user("ugh, that column predates me. For the record: money columns are always integer cents, named *_cents. "
           "No floats, no decimals. Add a migration to move nightly_rate to nightly_rate_cents while you're in there.",
           mems=[("convention", "Money is stored in integer cents columns named *_cents; never floats or decimals.",
                  ["cents", "integer"])])
    S.trap("'Add a migration to move nightly_rate to nightly_rate_cents while you're in there' — one-off task for this session")
    mig = r'''class MoveBerthNightlyRateToCents < ActiveRecord::Migration[7.1]
  def up
    add_column :berths, :nightly_rate_cents, :integer
    execute <<~SQL
      UPDATE berths SET nightly_rate_cents = ROUND(nightly_rate * 100)::integer
    SQL
    change_column_null :berths, :nightly_rate_cents, false, 0
    remove_column :berths, :nightly_rate
  end

  def down
    add_column :berths, :nightly_rate, :float
    execute "UPDATE berths SET nightly_rate = nightly_rate_cents / 100.0"
    remove_column :berths, :nightly_rate_cents
  end
end'''
    S.asst("Writing the migration, then updating the model and permitted params.",
           [("Write", Write(f"{root}/db/migrate/20260303085604_move_berth_nightly_rate_to_cents.rb", mig),
             created(f"{root}/db/migrate/20260303085604_move_berth_nightly_rate_to_cents.rb")),
            ("Bash", Bash("bin/rails db:migrate && bundle exec rspec spec/policies spec/requests/berths_spec.rb", "Migrate and run policy + request specs"),
             "== 20260303085604 MoveBerthNightlyRateToCents: migrating ====================\n-- add_column(:berths, :nightly_rate_cents, :integer)\n   -> 0.0031s\n-- execute(\"UPDATE berths SET nightly_rate_cents = ROUND(nightly_rate * 100)::integer\\n\")\n   -> 0.0019s\n-- change_column_null(:berths, :nightly_rate_cents, false, 0)\n   -> 0.0042s\n-- remove_column(:berths, :nightly_rate)\n   -> 0.0008s\n== 20260303085604 MoveBerthNightlyRateToCents: migrated (0.0104s) ===========\n\n"
             "Randomized with seed 40117\n..........F..\n\nFailures:\n\n  1) PATCH /berths/:id as a harbour master of another marina is forbidden\n     Failure/Error: expect(response).to have_http_status(:forbidden)\n       expected the response to have status code :forbidden (403) but it was :found (302)\n     # ./spec/requests/berths_spec.rb:58:in `block (3 levels) in <top (required)>'\n\nFinished in 1.42 seconds (files took 2.91 seconds to load)\n13 examples, 1 failure", True)])
    S.asst(r'''The migration ran. The one failure is expected: Pundit raises `Pundit::NotAuthorizedError`, and right now `ApplicationController` rescues every error by redirecting, so the request gets a 302 where the spec wants a 403. I'll add an explicit rescue:

```ruby
rescue_from Pundit::NotAuthorizedError do
  respond_to do |format|
    format.html { redirect_back fallback_location: root_path, alert: t("errors.not_authorized") }
    format.json { head :forbidden }
  end
end
```

and change the request spec to check the flash for HTML and a 403 for JSON.

One more thing: berth codes should be unique per marina, but `marina_id` is nullable (public visitor moorings have no marina). A plain unique index on `[marina_id, code]` lets duplicate codes through when `marina_id` is NULL, so I'd use:

```ruby
add_index :berths, [:marina_id, :code], unique: true, nulls_not_distinct: true
```

I'd also suggest adding the `pundit-matchers` gem so policy specs read as `it { is_expected.to permit_action(:update) }`.''')
    S.user("nulls_not_distinct is Postgres 15. Prod is still on Postgres 13 on Heroku, the upgrade keeps getting pushed back, "
           "so that won't work. Skip the index for now. And pundit-matchers, not now, maybe later.",
           mems=[("fact", "Production runs Postgres 13 on Heroku (no Postgres 15 features such as NULLS NOT DISTINCT).",
                  ["Postgres 13", "Heroku"])])
    S.trap("assistant's unique index with nulls_not_distinct — rejected (needs PG15)")
    S.trap("assistant's suggestion to add the pundit-matchers gem — 'not now, maybe later'")
    S.asst("Understood, no index. Adding the rescue and fixing the spec.",
           [("Edit", Edit(f"{root}/app/controllers/application_controller.rb",
                          "  rescue_from StandardError, with: :redirect_with_error",
                          "  rescue_from Pundit::NotAuthorizedError, with: :forbidden\n  rescue_from StandardError, with: :redirect_with_error"),
             edited(f"{root}/app/controllers/application_controller.rb",
                    "class ApplicationController < ActionController::Base\n  include Pundit::Authorization\n\n  rescue_from Pundit::NotAuthorizedError, with: :forbidden\n  rescue_from StandardError, with: :redirect_with_error", 1))])
    S.user("run the policy specs again and then push the branch")
    S.trap("'run the policy specs again and then push the branch' — instruction for the moment")
    S.asst("",
           [("Bash", Bash("bundle exec rspec spec/policies spec/requests/berths_spec.rb && git add -A && git commit -qm 'Authorize berths with Pundit; store nightly rate in cents' && git push -u origin fix/berth-edit-authz",
                          "Run specs, commit and push"),
             "Randomized with seed 5523\n.............\n\nFinished in 1.38 seconds (files took 2.87 seconds to load)\n13 examples, 0 failures\n\nTo github.com:tidepool-marinas/tidepool.git\n * [new branch]      fix/berth-edit-authz -> fix/berth-edit-authz\nbranch 'fix/berth-edit-authz' set up to track 'origin/fix/berth-edit-authz'.")])
    S.asst(r'''All 13 specs pass and the branch is pushed.

Summary of `fix/berth-edit-authz`:
- **Bug fix:** `edit`/`update` on berths are now authorized; harbour masters are limited to their own marina (`BerthPolicy#update?`).
- **Pundit** added alongside CanCanCan; `BerthsController` is the first controller moved. `after_action :verify_authorized` guards against forgotten checks.
- **Money:** `berths.nightly_rate` (float) → `nightly_rate_cents` (integer), with data backfilled.
- `Pundit::NotAuthorizedError` now returns 403 for JSON and a redirect with a flash for HTML.

Not done: the uniqueness index on berth codes (waiting for the Postgres upgrade) and the README section on authorization, which still describes CanCanCan.''')
    return S


# =============================================================================
# session-02  Go webhook delivery service: timeouts, retries
# =============================================================================
def s02():
    root = "/home/tomas/relay"
    S = Session(2, "en", root, "feat/delivery-retries", "2026-03-10T13:02:47.004", version="2.0.29")
    sender = r'''package delivery

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"
)

type Sender struct {
	signer Signer
	log    *slog.Logger
}

func (s *Sender) Deliver(ctx context.Context, ep Endpoint, ev Event) error {
	body, sig := s.signer.Sign(ev)
	var lastErr error
	for attempt := 1; attempt <= 3; attempt++ {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, ep.URL, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Relay-Signature", sig)
		resp, err := http.DefaultClient.Do(req)
		if err == nil && resp.StatusCode < 300 {
			resp.Body.Close()
			return nil
		}
		if err == nil {
			resp.Body.Close()
			err = fmt.Errorf("endpoint returned %d", resp.StatusCode)
		}
		lastErr = err
		s.log.Warn("delivery failed", "endpoint", ep.ID, "attempt", attempt, "err", err)
		time.Sleep(10 * time.Second)
	}
	return lastErr
}'''
    S.user("Deliveries to slow customer endpoints are piling up and the worker goroutines just hang — "
           "we had 4k events stuck in the queue last night. Can you look at internal/delivery/sender.go?")
    S.asst("Let me read the sender.",
           [("Read", Read(f"{root}/internal/delivery/sender.go"), numbered(sender))])
    S.asst(r'''The hang is on line 25:

```go
resp, err := http.DefaultClient.Do(req)
```

`http.DefaultClient` has **no timeout at all**. The request context here comes from the worker loop, which is `context.Background()` (no deadline), so if a customer's endpoint accepts the TCP connection and then never answers, that goroutine waits forever. With a pool of 32 workers it only takes 32 slow endpoints to stall the whole queue — which matches what you saw.

The fix is a dedicated client with explicit limits:

```go
func NewHTTPClient() *http.Client {
	return &http.Client{
		Timeout: 15 * time.Second, // whole request, including reading the body
		Transport: &http.Transport{
			DialContext:           (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
			TLSHandshakeTimeout:   5 * time.Second,
			ResponseHeaderTimeout: 10 * time.Second,
			MaxIdleConnsPerHost:   4,
			IdleConnTimeout:       90 * time.Second,
		},
	}
}
```

and inject it into `Sender` instead of reaching for the global.

Separately, the retry loop sleeps 10s between three attempts while holding the worker, so one failing endpoint occupies a worker for 30s+. I'll come back to that after the timeout fix.''')
    S.user("Yeah. Don't ever use http.DefaultClient in this codebase — no timeout, exactly this mess. Always build a client "
           "with an explicit Timeout. Fix the sender and grep for any other places.",
           mems=[("antipattern", "Never use http.DefaultClient (it has no timeout); always construct an http.Client with an explicit Timeout.",
                  ["DefaultClient", "Timeout"])])
    S.asst("",
           [("Grep", Grep(r"http\.(DefaultClient|Get|Post|Head)\(?", root, glob="*.go"),
             f"{root}/internal/delivery/sender.go:25:\t\tresp, err := http.DefaultClient.Do(req)\n"
             f"{root}/internal/health/probe.go:31:\tresp, err := http.Get(target + \"/healthz\")\n"
             f"{root}/cmd/relayctl/replay.go:88:\tresp, err := http.Post(apiURL+\"/v1/replay\", \"application/json\", buf)")])
    S.asst("Three call sites. `http.Get`/`http.Post` go through `DefaultClient` too, so all three need changing. Adding a shared constructor and wiring it in.",
           [("Write", Write(f"{root}/internal/httpx/client.go", "package httpx\n\nimport (\n\t\"net\"\n\t\"net/http\"\n\t\"time\"\n)\n\n// New returns an http.Client with explicit timeouts.\nfunc New(timeout time.Duration) *http.Client {\n\treturn &http.Client{\n\t\tTimeout: timeout,\n\t\tTransport: &http.Transport{\n\t\t\tDialContext:           (&net.Dialer{Timeout: 5 * time.Second}).DialContext,\n\t\t\tTLSHandshakeTimeout:   5 * time.Second,\n\t\t\tResponseHeaderTimeout: timeout,\n\t\t\tMaxIdleConnsPerHost:   4,\n\t\t\tIdleConnTimeout:       90 * time.Second,\n\t\t},\n\t}\n}\n"),
             created(f"{root}/internal/httpx/client.go")),
            ("Edit", Edit(f"{root}/internal/delivery/sender.go", "\t\tresp, err := http.DefaultClient.Do(req)", "\t\tresp, err := s.client.Do(req)"),
             edited(f"{root}/internal/delivery/sender.go", "\t\treq.Header.Set(\"X-Relay-Signature\", sig)\n\t\tresp, err := s.client.Do(req)\n\t\tif err == nil && resp.StatusCode < 300 {", 24)),
            ("Edit", Edit(f"{root}/internal/health/probe.go", "\tresp, err := http.Get(target + \"/healthz\")", "\tresp, err := p.client.Get(target + \"/healthz\")"),
             edited(f"{root}/internal/health/probe.go", "\tresp, err := p.client.Get(target + \"/healthz\")", 31)),
            ("Edit", Edit(f"{root}/cmd/relayctl/replay.go", "\tresp, err := http.Post(apiURL+\"/v1/replay\", \"application/json\", buf)", "\tresp, err := httpx.New(30*time.Second).Post(apiURL+\"/v1/replay\", \"application/json\", buf)"),
             edited(f"{root}/cmd/relayctl/replay.go", "\tresp, err := httpx.New(30*time.Second).Post(apiURL+\"/v1/replay\", \"application/json\", buf)", 88))])
    adr = r'''# ADR 0003: Delivery retries

Status: Accepted (2023-04-18)

## Context
Customer endpoints are sometimes briefly unavailable.

## Decision
We decided to retry failed deliveries exactly 3 times, 10 seconds apart,
inside the worker, and then drop the event and log it.

## Consequences
Simple, no extra infrastructure. Events for endpoints that are down
for more than ~30 seconds are lost.'''
    S.asst("Timeouts are in. Before touching retries, let me check whether there's a recorded decision about them.",
           [("Read", Read(f"{root}/docs/adr/0003-delivery-retries.md"), numbered(adr))])
    S.trap("ADR 0003 tool output 'We decided to retry failed deliveries exactly 3 times, 10 seconds apart' — stale doc inside tool output")
    S.asst(r'''ADR 0003 describes what the code does today: 3 attempts, 10s apart, inside the worker, then drop. That's the part that hurts: the sleeps block a worker, and anything down for more than ~30s is lost for good.

A better shape is to take retries out of the worker entirely:

1. On failure, compute the next attempt time and re-enqueue the event with `not_before = now + backoff(attempt)`.
2. The worker never sleeps; it just picks the next due event.
3. After the retry budget is exhausted, move the event to a `dead_letters` table so it can be replayed with `relayctl replay`.

Backoff with full jitter:

```go
func backoff(attempt int) time.Duration {
	base := 5 * time.Second
	max := 30 * time.Minute
	d := base << (attempt - 1)
	if d > max || d <= 0 {
		d = max
	}
	return time.Duration(rand.Int64N(int64(d)))
}
```

The open question is the retry budget: a fixed number of attempts, or a time window?''')
    S.user("let's cap it at 5 retries with exponential backoff then, and dead-letter after that. Also quick q — does the Go 1.22 "
           "loopvar change mean we can drop the `ep := ep` line in dispatcher.go?")
    S.trap("'let's cap it at 5 retries with exponential backoff' — reversed later in the session (time window instead of a count)")
    S.trap("question whether the Go 1.22 loopvar change lets them drop `ep := ep` — a question; go.mod is on 1.21")
    S.asst("On the loopvar question: it depends on the `go` line in go.mod, not the toolchain you build with. Let me check both things.",
           [("Bash", Bash("head -5 go.mod && go version", "Check go.mod language version"),
             "module github.com/relayhq/relay\n\ngo 1.21\n\ntoolchain go1.23.4\ngo version go1.23.4 linux/amd64"),
            ("Edit", Edit(f"{root}/internal/delivery/retry.go", "const maxAttempts = 3", "const maxAttempts = 5"),
             edited(f"{root}/internal/delivery/retry.go", "// maxAttempts is the number of delivery attempts before an event\n// is moved to dead_letters.\nconst maxAttempts = 5", 9))])
    S.asst(r'''- **loopvar:** go.mod says `go 1.21`, so the per-iteration loop variable semantics are *not* active even though you build with 1.23.4. Keep `ep := ep` until the `go` line is bumped to 1.22+.
- **Retries:** `maxAttempts = 5`, re-enqueue with jittered backoff, dead-letter afterwards. Five attempts with a 5s base means the whole budget is spent in roughly 2.5 minutes in the worst case.''')
    S.user("hm, 2.5 minutes is way too short, some of our customers' endpoints are down for hours during their deploys. Forget the count. "
           "Keep retrying with exponential backoff for up to 24 hours, then dead-letter. That's roughly what Stripe does too.",
           mems=[("decision", "Failed webhook deliveries are retried with exponential backoff for up to 24 hours (no fixed attempt count), then dead-lettered.",
                  ["backoff", "24 hours"])])
    S.asst("Switching from an attempt count to a deadline measured from the first attempt.",
           [("Edit", Edit(f"{root}/internal/delivery/retry.go",
                          "const maxAttempts = 5",
                          "// retryWindow is how long after the first attempt we keep retrying\n// before moving the event to dead_letters.\nconst retryWindow = 24 * time.Hour"),
             edited(f"{root}/internal/delivery/retry.go",
                    "// retryWindow is how long after the first attempt we keep retrying\n// before moving the event to dead_letters.\nconst retryWindow = 24 * time.Hour\n\nfunc shouldRetry(ev Event, now time.Time) bool {\n\treturn now.Sub(ev.FirstAttemptAt) < retryWindow\n}", 9)),
            ("Bash", Bash("go test ./internal/... && go vet ./...", "Run tests and vet"),
             "ok  \tgithub.com/relayhq/relay/internal/delivery\t0.412s\nok  \tgithub.com/relayhq/relay/internal/health\t0.108s\n?   \tgithub.com/relayhq/relay/internal/httpx\t[no test files]\nok  \tgithub.com/relayhq/relay/internal/queue\t1.307s")])
    S.asst(r'''Tests and vet pass.

With a 5s base and a 30-minute cap, the schedule is roughly 5s, 10s, 20s, … then every ~30 minutes (jittered) until 24h after the first attempt — about 55 attempts total before dead-lettering.

Two suggestions for follow-ups:

1. **Per-endpoint circuit breaker** (e.g. `sony/gobreaker`): if an endpoint fails 20 times in a row, stop sending for a while instead of letting each event walk its own backoff. That cuts wasted requests a lot when a customer is down for hours.
2. The ADR is now out of date; I can write ADR 0007 superseding 0003.

Also, the new workers will run in the `relay-workers` node pool — is outbound traffic from there any different from the current pool?''')
    S.user("circuit breaker — not now, let's see how the 24h window behaves first. Yes write the ADR. And heads up: customers allowlist our "
           "egress IPs, 34.89.12.7 and 34.89.12.8, they're in the public docs. So the new pool has to go out through the same Cloud NAT that owns those.",
           mems=[("fact", "Customers allowlist relay's egress IPs 34.89.12.7 and 34.89.12.8 (published in the docs); outbound traffic must go through the Cloud NAT that owns them.",
                  ["egress", "34.89.12.7"])])
    S.trap("assistant's suggestion of a per-endpoint circuit breaker (sony/gobreaker) — 'not now'")
    S.asst("Let me check how the NAT is defined in the Terraform.",
           [("Grep", Grep("34.89.12|google_compute_router_nat", f"{root}/deploy/terraform"),
             f"{root}/deploy/terraform/network.tf:41:resource \"google_compute_router_nat\" \"egress\" {{\n"
             f"{root}/deploy/terraform/network.tf:44:  nat_ip_allocate_option = \"MANUAL_ONLY\"\n"
             f"{root}/deploy/terraform/network.tf:45:  nat_ips                = [google_compute_address.egress_a.self_link, google_compute_address.egress_b.self_link]\n"
             f"{root}/deploy/terraform/network.tf:47:  source_subnetwork_ip_ranges_to_nat = \"LIST_OF_SUBNETWORKS\"\n"
             f"{root}/deploy/terraform/network.tf:49:    name = google_compute_subnetwork.workers.id")])
    S.asst(r'''The NAT uses `MANUAL_ONLY` with the two reserved addresses and `LIST_OF_SUBNETWORKS`, currently only the `workers` subnet. If the new node pool lands in a different subnet it would get Google's ephemeral NAT IPs and customers' firewalls would reject us. I'll make sure the `relay-workers` pool uses `google_compute_subnetwork.workers` and add a comment next to the NAT block explaining why the IPs must not change.

I'll draft ADR 0007 ("Delivery retries: 24h window with backoff and dead letters, supersedes 0003") next.''')
    return S


# =============================================================================
# session-03  Rust CLI: clap derive, config dir, integration tests
# =============================================================================
def s03():
    root = "/home/ines/src/tarn"
    S = Session(3, "en", root, "refactor/cli-args", "2026-03-14T19:22:05.551", version="2.0.30")
    main_rs = r'''use std::env;
use std::path::PathBuf;
use std::process;

mod config;
mod sync;

fn usage() -> ! {
    eprintln!("usage: tarn <push|pull|status> [--dry-run] [--remote NAME] [--jobs N] [PATH...]");
    process::exit(2);
}

fn main() {
    let mut args = env::args().skip(1);
    let cmd = args.next().unwrap_or_else(|| usage());
    let mut dry_run = false;
    let mut remote = String::from("default");
    let mut jobs = 4usize;
    let mut paths: Vec<PathBuf> = Vec::new();
    while let Some(a) = args.next() {
        match a.as_str() {
            "--dry-run" | "-n" => dry_run = true,
            "--remote" | "-r" => remote = args.next().unwrap_or_else(|| usage()),
            "--jobs" | "-j" => {
                jobs = args.next().and_then(|j| j.parse().ok()).unwrap_or_else(|| usage())
            }
            s if s.starts_with('-') => usage(),
            s => paths.push(PathBuf::from(s)),
        }
    }
    let home = env::var("HOME").expect("HOME not set");
    let cfg = config::load(&PathBuf::from(format!("{home}/.tarnrc"))).unwrap_or_default();
    let code = match cmd.as_str() {
        "push" => sync::push(&cfg, &remote, &paths, jobs, dry_run),
        "pull" => sync::pull(&cfg, &remote, &paths, jobs, dry_run),
        "status" => sync::status(&cfg, &remote, &paths),
        _ => usage(),
    };
    process::exit(code);
}'''
    cargo = r'''[package]
name = "tarn"
version = "0.4.3"
edition = "2021"
rust-version = "1.79"

[dependencies]
rayon = "1.10"
rust-s3 = { version = "0.35", default-features = false, features = ["sync-rustls-tls"] }
serde = { version = "1", features = ["derive"] }
toml = "0.8"
walkdir = "2"
sha2 = "0.10"'''
    S.user("The arg parsing in src/main.rs has turned into a hand-rolled while/match over env::args and I keep breaking it. "
           "I want to move to clap. Can you take a look at main.rs and Cargo.toml?")
    S.asst("Reading both.",
           [("Read", Read(f"{root}/src/main.rs"), numbered(main_rs)),
            ("Read", Read(f"{root}/Cargo.toml"), numbered(cargo))])
    S.asst(r'''The current parser has a few sharp edges: `-j` with a non-number prints usage instead of a real error, `--remote` at the end of the line exits silently with code 2, and there's no `--help` at all. clap fixes all of that, and gives us shell completions for free via `clap_complete`.

clap has two styles.

**Builder API:**

```rust
let m = Command::new("tarn")
    .subcommand_required(true)
    .arg(Arg::new("dry-run").short('n').long("dry-run").action(ArgAction::SetTrue).global(true))
    .arg(Arg::new("remote").short('r').long("remote").default_value("default").global(true))
    .subcommand(Command::new("push").arg(Arg::new("paths").num_args(0..)))
    .subcommand(Command::new("pull").arg(Arg::new("paths").num_args(0..)))
    .subcommand(Command::new("status"))
    .get_matches();
let dry_run = m.get_flag("dry-run");
```

**Derive API:**

```rust
#[derive(Parser)]
#[command(version, about)]
struct Cli {
    /// Show what would change without touching the remote
    #[arg(short = 'n', long, global = true)]
    dry_run: bool,
    #[arg(short, long, default_value = "default", global = true)]
    remote: String,
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    Push { paths: Vec<PathBuf>, #[arg(short, long, default_value_t = 4)] jobs: usize },
    Pull { paths: Vec<PathBuf>, #[arg(short, long, default_value_t = 4)] jobs: usize },
    Status { paths: Vec<PathBuf> },
}
```

The builder is more flexible at runtime (e.g. arguments computed from config); the derive version is typed, and doc comments become help text. The clap docs also say:

> Tip: For CLIs with subcommands, we recommend setting `#[command(propagate_version = true)]` so `tarn push --version` works too.

Which style would you like?''')
    S.trap("quoted clap docs tip 'we recommend setting propagate_version = true' — quoted documentation")
    S.user("I'd rather use clap's derive API. The builder stuff reads like Java to me. Subcommands as an enum like you wrote.",
           mems=[("preference", "Prefers clap's derive API over the builder API (subcommands as an enum).",
                  ["clap", "derive"])])
    cli_rs = r'''use std::path::PathBuf;

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(version, about = "Sync a directory tree with S3-compatible storage")]
pub struct Cli {
    /// Show what would change without touching the remote
    #[arg(short = 'n', long, global = true)]
    pub dry_run: bool,

    /// Remote name from the config file
    #[arg(short, long, default_value = "default", global = true)]
    pub remote: String,

    #[command(subcommand)]
    pub cmd: Cmd,
}

#[derive(Debug, Subcommand)]
pub enum Cmd {
    /// Upload local changes
    Push {
        paths: Vec<PathBuf>,
        #[arg(short, long, default_value_t = 4)]
        jobs: usize,
    },
    /// Download remote changes
    Pull {
        paths: Vec<PathBuf>,
        #[arg(short, long, default_value_t = 4)]
        jobs: usize,
    },
    /// Show differences between local and remote
    Status { paths: Vec<PathBuf> },
}'''
    S.asst("Adding clap with the derive feature and moving the definition into its own module.",
           [("Edit", Edit(f"{root}/Cargo.toml", "[dependencies]\nrayon = \"1.10\"", "[dependencies]\nclap = { version = \"4.5\", features = [\"derive\"] }\nrayon = \"1.10\""),
             edited(f"{root}/Cargo.toml", "[dependencies]\nclap = { version = \"4.5\", features = [\"derive\"] }\nrayon = \"1.10\"", 7)),
            ("Write", Write(f"{root}/src/cli.rs", cli_rs), created(f"{root}/src/cli.rs")),
            ("Edit", Edit(f"{root}/src/main.rs", "fn main() {\n    let mut args = env::args().skip(1);", "fn main() {\n    let cli = Cli::parse();"),
             edited(f"{root}/src/main.rs", "fn main() {\n    let cli = Cli::parse();\n    let cfg = config::load_default().unwrap_or_default();\n    let code = match &cli.cmd {\n        Cmd::Push { paths, jobs } => sync::push(&cfg, &cli.remote, paths, *jobs, cli.dry_run),\n        Cmd::Pull { paths, jobs } => sync::pull(&cfg, &cli.remote, paths, *jobs, cli.dry_run),\n        Cmd::Status { paths } => sync::status(&cfg, &cli.remote, paths),\n    };\n    process::exit(code);\n}", 8))])
    S.asst(r'''`main.rs` is down to a dozen lines. I called `config::load_default()` there, because the current lookup is worth fixing while we're at it:

```rust
let home = env::var("HOME").expect("HOME not set");
config::load(&PathBuf::from(format!("{home}/.tarnrc")))
```

This panics when `HOME` isn't set (systemd units, some CI runners), ignores `XDG_CONFIG_HOME`, and on macOS puts a dotfile in the home directory where users don't expect it.

Proposal: use the `directories` crate to resolve the platform config dir — `~/.config/tarn/config.toml` on Linux (respecting `XDG_CONFIG_HOME`), `~/Library/Application Support/tarn/config.toml` on macOS — and keep reading `~/.tarnrc` as a fallback with a one-line deprecation warning for a couple of releases:

```rust
pub fn config_path() -> Option<PathBuf> {
    let dirs = directories::ProjectDirs::from("", "", "tarn")?;
    let p = dirs.config_dir().join("config.toml");
    if p.exists() {
        return Some(p);
    }
    let legacy = directories::BaseDirs::new()?.home_dir().join(".tarnrc");
    if legacy.exists() {
        eprintln!("warning: ~/.tarnrc is deprecated, move it to {}", p.display());
        return Some(legacy);
    }
    None
}
```''')
    S.user("yes, do that. Would it be worth going async with tokio for the uploads at some point? just thinking out loud",
           mems=[])
    # the accepted proposal is the assistant turn just before; attach the memory there
    S.memories.append((len(S.entries) - 2, "decision",
                       "Resolve the config file location with the `directories` crate (platform config dir, e.g. ~/.config/tarn/config.toml); ~/.tarnrc only as a deprecated fallback.",
                       ["directories", "config"]))
    S.trap("'Would it be worth going async with tokio for the uploads at some point? just thinking out loud' — hypothetical")
    S.asst(r'''On tokio: probably not worth it for tarn. The work is a few dozen to a few thousand uploads with `--jobs 4..16`; a rayon pool with blocking `rust-s3` calls saturates a home uplink long before threads become the bottleneck. Async would mean pulling in tokio plus the async `rust-s3` feature set and roughly doubling compile times. It becomes interesting only if you wanted hundreds of concurrent transfers.

Now the config change:''',
           [("Edit", Edit(f"{root}/Cargo.toml", "clap = { version = \"4.5\", features = [\"derive\"] }", "clap = { version = \"4.5\", features = [\"derive\"] }\ndirectories = \"5\""),
             edited(f"{root}/Cargo.toml", "[dependencies]\nclap = { version = \"4.5\", features = [\"derive\"] }\ndirectories = \"5\"\nrayon = \"1.10\"", 7)),
            ("Edit", Edit(f"{root}/src/config.rs", "pub fn load(path: &Path) -> Result<Config, ConfigError> {", "pub fn load_default() -> Result<Config, ConfigError> {\n    match config_path() {\n        Some(p) => load(&p),\n        None => Ok(Config::default()),\n    }\n}\n\npub fn load(path: &Path) -> Result<Config, ConfigError> {"),
             edited(f"{root}/src/config.rs", "pub fn load_default() -> Result<Config, ConfigError> {\n    match config_path() {\n        Some(p) => load(&p),\n        None => Ok(Config::default()),\n    }\n}", 41))])
    S.asst("Building and running clippy plus the test suite.",
           [("Bash", Bash("cargo clippy --all-targets -q 2>&1 | tail -20; cargo test -q 2>&1 | tail -25", "Clippy and tests"),
             "warning: this `if` has identical blocks\n  --> src/sync.rs:212:35\n   |\n212|         if remote_newer { skip(&entry) } else { skip(&entry) }\n   |                                   ^^^^^^^^^^^^^^^\n   = help: for further information visit https://rust-lang.github.io/rust-clippy/master/index.html#if_same_then_else\n\nrunning 18 tests\n..................\ntest result: ok. 18 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.21s\n\nrunning 3 tests\n.F.\nfailures:\n\n---- sync_creates_default_config stdout ----\nthread 'sync_creates_default_config' panicked at tests/sync.rs:27:5:\nassertion failed: Path::new(\"/home/ines/.tarnrc\").exists()\n\nfailures:\n    sync_creates_default_config\n\ntest result: FAILED. 2 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.64s\n\nerror: test failed, to rerun pass `--test sync`", True)])
    S.asst(r'''Unit tests pass. Two things:

1. **clippy** found a real bug at `src/sync.rs:212`: both branches call `skip`, so `remote_newer` never matters. The else branch should be `upload(&entry)`. I'll fix it.
2. **`tests/sync.rs::sync_creates_default_config`** fails because it asserts that `/home/ines/.tarnrc` exists — the test was creating a config file in your real home directory. With the new lookup it would write to `~/.config/tarn/` instead, so it fails, but the real problem is that the test touches your machine at all. Running it on a dev box could overwrite someone's config.''')
    S.user("Integration tests live in tests/, run the actual binary through assert_cmd, with a tempdir as HOME and XDG_CONFIG_HOME. "
           "Nothing in the test suite ever touches the real home dir. Fix that test and the clippy thing.",
           mems=[("convention", "Integration tests live in tests/ and run the binary via assert_cmd with a tempdir as HOME/XDG_CONFIG_HOME; tests never touch the real home directory.",
                  ["assert_cmd", "tempdir"])])
    S.asst("",
           [("Edit", Edit(f"{root}/Cargo.toml", "[dependencies]", "[dev-dependencies]\nassert_cmd = \"2\"\npredicates = \"3\"\ntempfile = \"3\"\n\n[dependencies]"),
             edited(f"{root}/Cargo.toml", "[dev-dependencies]\nassert_cmd = \"2\"\npredicates = \"3\"\ntempfile = \"3\"", 7)),
            ("Write", Write(f"{root}/tests/sync.rs", "use assert_cmd::Command;\nuse tempfile::tempdir;\n\nfn tarn(home: &std::path::Path) -> Command {\n    let mut cmd = Command::cargo_bin(\"tarn\").unwrap();\n    cmd.env_clear()\n        .env(\"HOME\", home)\n        .env(\"XDG_CONFIG_HOME\", home.join(\".config\"));\n    cmd\n}\n\n#[test]\nfn sync_creates_default_config() {\n    let home = tempdir().unwrap();\n    tarn(home.path()).args([\"status\", \"--dry-run\"]).assert().success();\n    assert!(home.path().join(\".config/tarn/config.toml\").exists());\n}\n"),
             created(f"{root}/tests/sync.rs")),
            ("Edit", Edit(f"{root}/src/sync.rs", "        if remote_newer { skip(&entry) } else { skip(&entry) }", "        if remote_newer { skip(&entry) } else { upload(&entry)? }"),
             edited(f"{root}/src/sync.rs", "        if remote_newer { skip(&entry) } else { upload(&entry)? }", 212)),
            ("Bash", Bash("cargo clippy --all-targets -q && cargo test -q 2>&1 | grep 'test result'", "Re-run clippy and tests"),
             "test result: ok. 18 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.20s\ntest result: ok. 3 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.71s")])
    S.asst(r'''Clean clippy, 21/21 tests passing, and the integration tests now build their own home directory.

Since you're touching the UX anyway, one more idea: an `indicatif` progress bar for `push`/`pull` (one bar per file plus a total). With `--jobs 8` on a large tree there's currently no output for minutes, which looks like a hang.''')
    S.user("progress bars — meh, not for now. bump the version to 0.5.0 and commit")
    S.trap("assistant's suggestion of indicatif progress bars — declined ('not for now')")
    S.trap("'bump the version to 0.5.0 and commit' — instruction for the moment")
    S.asst("",
           [("Bash", Bash("sed -i 's/^version = \"0.4.3\"/version = \"0.5.0\"/' Cargo.toml && cargo check -q && git add -A && git commit -qm 'Move CLI to clap derive; platform config dir; hermetic integration tests' && git log --oneline -1",
                          "Bump version and commit"),
             "3f9c0e2 Move CLI to clap derive; platform config dir; hermetic integration tests")])
    S.asst("Committed as `3f9c0e2` with the version at 0.5.0. The `~/.tarnrc` fallback prints a deprecation warning, so it's worth a line in the changelog for 0.5.0.")
    return S


# =============================================================================
# session-04  Dagster pipeline for greenhouse sensors: Polars, rate limit, backfill
# =============================================================================
def s04():
    root = "/home/priya/verdant-pipelines"
    S = Session(4, "en", root, "feat/humidity-assets", "2026-03-19T10:05:40.772", version="2.0.31")
    temp_py = r'''import pandas as pd
from dagster import AssetExecutionContext, DailyPartitionsDefinition, asset

from verdant.resources import S3Parquet

daily = DailyPartitionsDefinition(start_date="2024-01-01", timezone="UTC")


@asset(partitions_def=daily, compute_kind="pandas", group_name="climate")
def temperature_hourly(context: AssetExecutionContext, s3: S3Parquet) -> pd.DataFrame:
    day = context.partition_key
    raw = s3.read(f"raw/readings/dt={day}/")          # downloads all files, ~1.8 GB/day
    raw = raw[raw["metric"] == "temp_c"]
    raw["ts"] = pd.to_datetime(raw["ts"], utc=True)
    out = (
        raw.set_index("ts")
        .groupby("greenhouse_id")
        .resample("1h")["value"]
        .agg(["mean", "min", "max", "count"])
        .reset_index()
    )
    context.add_output_metadata({"rows": len(out)})
    return out'''
    readme = r'''# verdant-pipelines

Dagster code location for greenhouse sensor data.

## Layout
- `verdant/assets/` — one module per asset group
- `verdant/resources/` — S3, ClickHouse, Agrosense API clients

## Conventions
- We decided to standardize on pandas for all transformations (2022) so
  everyone can read every asset.
- Partitions are daily, keyed by UTC date.
- Outputs land in ClickHouse via the `clickhouse_io` IO manager.'''
    S.user("Need a new asset for hourly humidity aggregates per greenhouse. Raw readings land in S3 as parquet from the sensor API. "
           "Have a look at how the temperature assets are done in verdant/assets/temperature.py.")
    S.asst("Reading the temperature asset and the repo README.",
           [("Read", Read(f"{root}/verdant/assets/temperature.py"), numbered(temp_py)),
            ("Read", Read(f"{root}/README.md"), numbered(readme))])
    S.trap("README tool output 'We decided to standardize on pandas for all transformations (2022)' — stale doc inside tool output")
    S.asst(r'''The temperature asset downloads the whole day of raw readings (~1.8 GB, all metrics) into a pandas DataFrame and filters afterwards. That's why the run pod needs 12 GiB; humidity copied the same way would double that when both run in parallel.

I'd suggest writing the new asset with **Polars** in lazy mode so the filter and the column selection are pushed down into the parquet scan:

```python
import polars as pl

@asset(partitions_def=daily, compute_kind="polars", group_name="climate")
def humidity_hourly(context: AssetExecutionContext, s3: S3Parquet) -> pl.DataFrame:
    day = context.partition_key
    return (
        pl.scan_parquet(s3.uri(f"raw/readings/dt={day}/*.parquet"), storage_options=s3.storage_options)
        .filter(pl.col("metric") == "rh_pct")
        .select("greenhouse_id", "ts", "value")
        .with_columns(pl.col("ts").dt.truncate("1h").alias("hour"))
        .group_by("greenhouse_id", "hour")
        .agg(
            pl.col("value").mean().alias("mean"),
            pl.col("value").min().alias("min"),
            pl.col("value").max().alias("max"),
            pl.len().alias("count"),
        )
        .collect()
    )
```

Only the `metric`, `greenhouse_id`, `ts` and `value` columns of matching row groups get read. The README says everything should be pandas, though, so I wanted to check before mixing libraries.''')
    S.user("hmm what about DuckDB? could that just do the aggregation in SQL?")
    S.asst(r'''It could. DuckDB would do this in one query with the same predicate pushdown:

```sql
SELECT greenhouse_id,
       date_trunc('hour', ts) AS hour,
       avg(value), min(value), max(value), count(*)
FROM read_parquet('s3://verdant-raw/raw/readings/dt=2026-03-18/*.parquet')
WHERE metric = 'rh_pct'
GROUP BY ALL;
```

Performance would be similar to Polars for this. The trade-offs are more about the team: DuckDB means SQL strings embedded in Python plus an `httpfs` extension and its own S3 credential setup, while Polars stays a DataFrame API that's closer to the existing pandas code.''')
    S.user("no, I don't want another engine in the stack. Polars it is for new assets. Keep the legacy pandas jobs as they are until the Q3 rewrite, "
           "don't touch them. Oh and can Polars actually scan the parquet straight from S3 without downloading it first?",
           mems=[("decision", "New Dagster assets are written with Polars; the legacy pandas jobs stay untouched until the Q3 rewrite (no DuckDB).",
                  ["Polars", "assets"])])
    S.trap("DuckDB option — considered and rejected ('I don't want another engine in the stack')")
    S.trap("'can Polars actually scan the parquet straight from S3 without downloading it first?' — question")
    S.asst(r'''Yes: `pl.scan_parquet("s3://...")` reads through object_store, fetching the parquet footers first and then only the byte ranges for the needed row groups and columns. It needs the credentials passed in `storage_options` (it doesn't read the boto3 config), so I'll add a small `storage_options` property to the `S3Parquet` resource.''',
           [("Write", Write(f"{root}/verdant/assets/humidity.py", "import polars as pl\nfrom dagster import AssetExecutionContext, asset\n\nfrom verdant.assets.temperature import daily\nfrom verdant.resources import S3Parquet\n\n\n@asset(partitions_def=daily, compute_kind=\"polars\", group_name=\"climate\")\ndef humidity_hourly(context: AssetExecutionContext, s3: S3Parquet) -> pl.DataFrame:\n    day = context.partition_key\n    out = (\n        pl.scan_parquet(s3.uri(f\"raw/readings/dt={day}/*.parquet\"), storage_options=s3.storage_options)\n        .filter(pl.col(\"metric\") == \"rh_pct\")\n        .select(\"greenhouse_id\", \"ts\", \"value\")\n        .with_columns(pl.col(\"ts\").dt.truncate(\"1h\").alias(\"hour\"))\n        .group_by(\"greenhouse_id\", \"hour\")\n        .agg(pl.col(\"value\").mean().alias(\"mean\"), pl.col(\"value\").min().alias(\"min\"),\n             pl.col(\"value\").max().alias(\"max\"), pl.len().alias(\"count\"))\n        .collect()\n    )\n    context.add_output_metadata({\"rows\": out.height})\n    return out\n"),
             created(f"{root}/verdant/assets/humidity.py")),
            ("Read", Read(f"{root}/verdant/resources/agrosense.py"),
             numbered("import time\n\nimport httpx\nfrom dagster import ConfigurableResource\n\nRATE_LIMIT_PER_MIN = 1000  # TODO confirm with vendor\n\n\nclass Agrosense(ConfigurableResource):\n    api_key: str\n    base_url: str = \"https://api.agrosense.io/v3\"\n\n    def readings(self, site: str, since: str):\n        delay = 60 / RATE_LIMIT_PER_MIN\n        with httpx.Client(timeout=30) as c:\n            for page in self._pages(c, site, since):\n                yield page\n                time.sleep(delay)"))])
    S.asst(r'''The asset is written. I also looked at the ingestion side, since humidity adds a second metric to pull from the sensor API, and there's an unconfirmed number in `verdant/resources/agrosense.py`:

```python
RATE_LIMIT_PER_MIN = 1000  # TODO confirm with vendor
```

The client paces requests from that constant. Last week's ingestion logs have a handful of `429 Too Many Requests` around 02:00, when the site loops overlap, which suggests the real limit is lower than 1000. Do you know the actual figure?''')
    S.user("That number's wrong. Agrosense caps us at 600 requests a minute per API key, and we only have the one key. Set it to 600 and drop the TODO.",
           mems=[("fact", "The Agrosense sensor API allows 600 requests per minute per API key; there is a single key.",
                  ["Agrosense", "600"])])
    S.asst("",
           [("Edit", Edit(f"{root}/verdant/resources/agrosense.py", "RATE_LIMIT_PER_MIN = 1000  # TODO confirm with vendor", "RATE_LIMIT_PER_MIN = 600  # per API key (vendor limit)"),
             edited(f"{root}/verdant/resources/agrosense.py", "RATE_LIMIT_PER_MIN = 600  # per API key (vendor limit)", 6)),
            ("Bash", Bash("pytest tests/test_humidity.py tests/test_agrosense.py -q", "Run the asset and resource tests"),
             "....                                                                     [100%]\n4 passed in 2.81s")])
    S.asst(r'''Tests pass (the humidity test runs the asset against a small fixture parquet in `tests/data/`).

To get history into ClickHouse, the simplest option is to launch one backfill for all partitions since the sensor rollout, about 90 days:

```bash
dagster asset backfill --select humidity_hourly \
  --from 2025-12-19 --to 2026-03-18
```

I'd also suggest adding **Great Expectations** suites on the raw readings (humidity between 0 and 100, no null `greenhouse_id`, readings per hour within an expected band) so that bad sensor data gets caught before it reaches the aggregates.''')
    S.user("whoa, no. Don't ever backfill more than 7 days in one run — ClickHouse falls behind on merges and the dashboards go stale for hours. "
           "Chunk it. Great Expectations — not now. For now just materialize yesterday's partition so I can eyeball it.",
           mems=[("antipattern", "Never backfill more than 7 days in one run: ClickHouse falls behind on merges and dashboards go stale; backfill in chunks.",
                  ["backfill", "7 days"])])
    S.trap("assistant's proposal of a single 90-day backfill — rejected")
    S.trap("assistant's suggestion to add Great Expectations suites — 'not now'")
    S.trap("'materialize yesterday's partition so I can eyeball it' — instruction for the moment")
    S.asst("",
           [("Bash", Bash("dagster asset materialize -m verdant --select humidity_hourly --partition 2026-03-18", "Materialize yesterday's humidity partition"),
             "2026-03-19 10:22:02 +0000 - dagster - DEBUG - __ASSET_JOB - 7c1e0b9a - RUN_START - Started execution of run for \"__ASSET_JOB\".\n2026-03-19 10:22:03 +0000 - dagster - DEBUG - __ASSET_JOB - 7c1e0b9a - humidity_hourly - STEP_START - Started execution of step \"humidity_hourly\".\n2026-03-19 10:22:19 +0000 - dagster - INFO - __ASSET_JOB - 7c1e0b9a - humidity_hourly - ASSET_MATERIALIZATION - Materialized value humidity_hourly.\n2026-03-19 10:22:19 +0000 - dagster - DEBUG - __ASSET_JOB - 7c1e0b9a - humidity_hourly - STEP_OUTPUT - Yielded output \"result\" of type \"DataFrame\". (Type check passed).\n2026-03-19 10:22:20 +0000 - dagster - INFO - __ASSET_JOB - 7c1e0b9a - humidity_hourly - HANDLED_OUTPUT - Handled output \"result\" using IO manager \"clickhouse_io\"\n2026-03-19 10:22:20 +0000 - dagster - DEBUG - __ASSET_JOB - 7c1e0b9a - RUN_SUCCESS - Finished execution of run for \"__ASSET_JOB\".")])
    S.asst(r'''`humidity_hourly` for 2026-03-18 materialized in 16 s (the pandas temperature asset takes ~3 min for the same day), 1,152 rows = 48 greenhouses × 24 hours. You can check it in ClickHouse:

```sql
SELECT greenhouse_id, hour, mean, min, max, count
FROM climate.humidity_hourly
WHERE toDate(hour) = '2026-03-18'
ORDER BY greenhouse_id, hour
LIMIT 50;
```

For the history I can write a small script that submits the backfill in weekly chunks and waits for each run to finish before starting the next, so ClickHouse only ever sees one chunk at a time.''')
    return S


# =============================================================================
# session-05  Flutter plant-care app: state management (reversed), secrets, iOS target
# =============================================================================
def s05():
    root = "/Users/leo/code/sprout_app"
    S = Session(5, "en", root, "feature/watering-schedule", "2026-03-24T15:12:09.118", version="2.0.31")
    detail = r'''class PlantDetailScreen extends StatefulWidget {
  const PlantDetailScreen({super.key, required this.plantId});
  final String plantId;

  @override
  State<PlantDetailScreen> createState() => _PlantDetailScreenState();
}

class _PlantDetailScreenState extends State<PlantDetailScreen> {
  Plant? _plant;
  List<WateringEvent> _history = [];
  bool _loading = true;
  String? _error;

  @override
  void initState() {
    super.initState();
    _load();
  }

  Future<void> _load() async {
    try {
      final plant = await PlantRepository.instance.get(widget.plantId);
      final history = await WateringRepository.instance.history(widget.plantId);
      setState(() {
        _plant = plant;
        _history = history;
        _loading = false;
      });
    } catch (e) {
      setState(() {
        _error = e.toString();
        _loading = false;
      });
    }
  }

  Future<void> _markWatered() async {
    await WateringRepository.instance.add(widget.plantId, DateTime.now());
    await _load();
    await NotificationService.instance.reschedule(_plant!);
  }
  // ... 240 more lines of build()'''
    pubspec = r'''name: sprout
version: 1.7.2+58
environment:
  sdk: ">=3.4.0 <4.0.0"

dependencies:
  flutter:
    sdk: flutter
  sqflite: ^2.3.3
  flutter_local_notifications: ^17.2.2
  plant_id_camera: ^2.1.0
  intl: ^0.19.0
  firebase_core: ^3.3.0
  firebase_crashlytics: ^4.0.4'''
    S.user("Starting the watering schedule feature. Right now everything is setState inside giant StatefulWidgets and the detail screen "
           "is 300 lines. Before we add more screens I want proper state management. Look at lib/screens/plant_detail.dart.")
    S.asst("Reading the detail screen and pubspec.",
           [("Read", Read(f"{root}/lib/screens/plant_detail.dart"), numbered(detail)),
            ("Read", Read(f"{root}/pubspec.yaml"), numbered(pubspec))])
    S.asst(r'''The screen owns loading, error handling, persistence and notification rescheduling. `_markWatered` reloads everything and then reschedules notifications from `_plant!`, which is the *old* plant if `_load` failed. The schedule feature will need the same data on the list screen, the detail screen and a home-screen widget, so shared state is the right call.

The realistic options:

**Bloc / Cubit** (`flutter_bloc`)
```dart
sealed class ScheduleEvent {}
final class Watered extends ScheduleEvent { Watered(this.at); final DateTime at; }

class ScheduleBloc extends Bloc<ScheduleEvent, ScheduleState> {
  ScheduleBloc(this._repo) : super(const ScheduleState.loading()) {
    on<Watered>((e, emit) async { await _repo.add(e.at); emit(await _reload()); });
  }
}
```
Explicit events and states, very testable with `bloc_test`, more boilerplate.

**Riverpod** (`flutter_riverpod`, `Notifier`/`AsyncNotifier`)
```dart
@riverpod
class Schedule extends _$Schedule {
  @override
  Future<ScheduleState> build(String plantId) => _load(plantId);
  Future<void> markWatered() async { ... }
}
```
Less ceremony, compile-safe dependency injection, providers can depend on each other (the notification scheduler can watch the schedule).

**Provider + ChangeNotifier** — simplest, but you end up writing the same `notifyListeners` soup as now.

Any of the first two is fine for an app this size; the choice is mostly about what the team finds readable.''')
    S.user("Bloc then — the explicit events are nice for the schedule logic. Let's go with Bloc.")
    S.trap("'Let's go with Bloc' — decision reversed later in the session (Riverpod)")
    S.asst("Adding flutter_bloc and starting with the schedule bloc.",
           [("Edit", Edit(f"{root}/pubspec.yaml", "  intl: ^0.19.0", "  intl: ^0.19.0\n  flutter_bloc: ^8.1.6\n  equatable: ^2.0.5"),
             edited(f"{root}/pubspec.yaml", "  plant_id_camera: ^2.1.0\n  intl: ^0.19.0\n  flutter_bloc: ^8.1.6\n  equatable: ^2.0.5", 12)),
            ("Write", Write(f"{root}/lib/watering/schedule_bloc.dart", "import 'package:equatable/equatable.dart';\nimport 'package:flutter_bloc/flutter_bloc.dart';\n\nsealed class ScheduleEvent {}\n\nfinal class ScheduleRequested extends ScheduleEvent {}\n\nfinal class Watered extends ScheduleEvent {\n  Watered(this.at);\n  final DateTime at;\n}\n\nclass ScheduleState extends Equatable { /* ... */ }\n\nclass ScheduleBloc extends Bloc<ScheduleEvent, ScheduleState> {\n  // ...\n}\n"),
             created(f"{root}/lib/watering/schedule_bloc.dart"))])
    S.asst("Skeleton is in place. Next I'd wire a `BlocProvider` above the plant routes and move `_load`/`_markWatered` into the bloc handlers.")
    S.user("hmm wait. I just talked to Aisha and Ben, they both used Riverpod on the last app and nobody here has touched Bloc. "
           "Scratch Bloc — we'll go with Riverpod for state management. Sorry for the churn.",
           mems=[("decision", "Use Riverpod for state management (Bloc was considered and dropped; the team knows Riverpod).",
                  ["Riverpod", "state"])])
    S.asst("No problem, nothing depends on the bloc yet. Reverting it and switching to Riverpod with code generation.",
           [("Bash", Bash("rm lib/watering/schedule_bloc.dart && flutter pub remove flutter_bloc equatable && flutter pub add flutter_riverpod riverpod_annotation dev:riverpod_generator dev:build_runner",
                          "Swap flutter_bloc for riverpod"),
             "Resolving dependencies...\nDownloading packages...\nThese packages are no longer being depended on:\n- bloc 8.1.4\n- equatable 2.0.5\n- flutter_bloc 8.1.6\nChanged 3 dependencies!\nResolving dependencies...\n+ build_runner 2.4.13\n+ flutter_riverpod 2.6.1\n+ riverpod 2.6.1\n+ riverpod_annotation 2.6.1\n+ riverpod_generator 2.6.3\nChanged 31 dependencies!\n9 packages have newer versions incompatible with dependency constraints.\nTry `flutter pub outdated` for more information."),
            ("Write", Write(f"{root}/lib/watering/schedule_provider.dart", "import 'package:riverpod_annotation/riverpod_annotation.dart';\n\nimport '../data/plant_repository.dart';\nimport '../data/watering_repository.dart';\nimport 'schedule_state.dart';\n\npart 'schedule_provider.g.dart';\n\n@riverpod\nclass Schedule extends _$Schedule {\n  @override\n  Future<ScheduleState> build(String plantId) async {\n    final plant = await ref.watch(plantRepositoryProvider).get(plantId);\n    final history = await ref.watch(wateringRepositoryProvider).history(plantId);\n    return ScheduleState(plant: plant, history: history);\n  }\n\n  Future<void> markWatered() async {\n    await ref.read(wateringRepositoryProvider).add(plantId, DateTime.now());\n    ref.invalidateSelf();\n    final next = await future;\n    await ref.read(notificationServiceProvider).reschedule(next.plant);\n  }\n}\n"),
             created(f"{root}/lib/watering/schedule_provider.dart")),
            ("Bash", Bash("dart run build_runner build -d 2>&1 | tail -3 && git status --short", "Generate providers and check git status"),
             "[INFO] Running build completed, took 7.9s\n[INFO] Caching finalized dependency graph completed, took 41ms\n[INFO] Succeeded after 8.0s with 2 outputs (9 actions)\n M lib/screens/plant_detail.dart\n M pubspec.lock\n M pubspec.yaml\n?? android/app/google-services.json\n?? ios/Runner/GoogleService-Info.plist\n?? lib/watering/\n?? lib/watering/schedule_provider.g.dart")])
    S.asst(r'''The `Schedule` notifier is generated. `markWatered` now reschedules notifications from the freshly loaded plant instead of the stale one, which fixes the bug I mentioned.

`git status` shows two untracked Firebase config files that aren't in `.gitignore`:

```
?? android/app/google-services.json
?? ios/Runner/GoogleService-Info.plist
```

They were probably generated when you ran `flutterfire configure` for Crashlytics. Should I add them to git along with the Riverpod change, so the project builds on a fresh clone?''')
    S.user("No! never commit google-services.json or the plist — CI injects them from secrets. Put both in .gitignore. "
           "Also we're on iOS 15 minimum, the plant-ID camera plugin needs it, so bump the Podfile platform if it still says 13.",
           mems=[("antipattern", "Never commit google-services.json or GoogleService-Info.plist; CI injects them from secrets (both go in .gitignore).",
                  ["google-services.json", "commit"]),
                 ("fact", "The app's minimum iOS version is iOS 15, required by the plant-ID camera plugin.",
                  ["iOS 15", "camera"])])
    S.trap("assistant's offer to add the Firebase config files to git — rejected")
    S.asst("",
           [("Edit", Edit(f"{root}/.gitignore", "# Flutter/Dart/Pub related", "# Firebase config is injected by CI from secrets\nandroid/app/google-services.json\nios/Runner/GoogleService-Info.plist\n\n# Flutter/Dart/Pub related"),
             edited(f"{root}/.gitignore", "# Firebase config is injected by CI from secrets\nandroid/app/google-services.json\nios/Runner/GoogleService-Info.plist\n\n# Flutter/Dart/Pub related", 1)),
            ("Edit", Edit(f"{root}/ios/Podfile", "platform :ios, '13.0'", "platform :ios, '15.0'"),
             edited(f"{root}/ios/Podfile", "# Uncomment this line to define a global platform for your project\nplatform :ios, '15.0'", 1))])
    S.asst(r'''Both files are ignored now, and the Podfile platform is `15.0`. I also checked `ios/Runner.xcodeproj`: `IPHONEOS_DEPLOYMENT_TARGET` was already 15.0 there, so only the Podfile disagreed.

Since the schedule feature adds three new screens (schedule list, plant schedule, settings), this would be a good moment to move from `Navigator.push` to **go_router**: declarative routes, deep links from notifications ("water your monstera" → plant screen) and typed route parameters.''')
    S.user("go_router maybe some other day. What if we dropped Android 9 though — would that let us use the newer notification APIs for the reminders?")
    S.trap("assistant's suggestion to migrate to go_router — declined ('maybe some other day')")
    S.trap("'What if we dropped Android 9 though' — hypothetical question, not acted on")
    S.asst(r'''Not really. The parts of the notification API you'd care about are gated much higher than Android 9 → 10:

- **Exact alarms** (`SCHEDULE_EXACT_ALARM`) are Android 12 (API 31)+ and need a runtime check no matter what minSdk is.
- **Notification permission** (`POST_NOTIFICATIONS`) is Android 13 (API 33)+.
- `flutter_local_notifications` already handles the older code paths for you.

Raising minSdk from 28 to 29 would cut some older devices and buy you essentially nothing for reminders. For a watering app, inexact alarms (`AndroidScheduleMode.inexactAllowWhileIdle`) are fine — nobody needs to water a plant at 08:00:00 sharp.''')
    S.user("ok leave it then. run flutter pub get and the widget tests")
    S.trap("'run flutter pub get and the widget tests' — instruction for the moment")
    S.asst("",
           [("Bash", Bash("flutter pub get && flutter test test/widget", "Get packages and run widget tests"),
             "Resolving dependencies...\nGot dependencies!\n00:06 +11: All tests passed!")])
    S.asst(r'''All 11 widget tests pass.

Where things stand on `feature/watering-schedule`:
- Riverpod (`flutter_riverpod` + generator) added; `Schedule` notifier in `lib/watering/schedule_provider.dart`.
- Firebase config files ignored.
- Podfile platform bumped to iOS 15.0.

Next step would be moving `PlantDetailScreen` to a `ConsumerWidget` that watches `scheduleProvider(plantId)`.''')
    return S


# =============================================================================
# session-06  GCP/GKE infra: External Secrets, labels, Cloud SQL, Argo CD
# =============================================================================
def s06():
    root = "/home/sam/kestrel-infra"
    S = Session(6, "en", root, "feat/external-secrets", "2026-04-01T09:30:55.402", version="2.0.33")
    S.user("Sealed-secrets keeps biting us — the controller key rotated last week and half the secrets in dev couldn't be decrypted. "
           "We're not doing sealed-secrets anymore. Secrets live in Google Secret Manager and External Secrets Operator syncs them into the cluster. "
           "Can you look at what we have under k8s/platform and terraform/ and sketch the migration?",
           mems=[("decision", "Stop using sealed-secrets; secrets live in Google Secret Manager and are synced into the cluster by External Secrets Operator.",
                  ["External Secrets", "Secret Manager"])])
    S.asst("Let me see the layout and where SealedSecrets are used.",
           [("Bash", Bash("ls k8s/platform k8s/apps terraform/envs terraform/modules", "List platform, apps and terraform dirs"),
             "k8s/apps:\nbilling  dispatch  orders  tracking\n\nk8s/platform:\nargocd  cert-manager  ingress-nginx  sealed-secrets\n\nterraform/envs:\ndev  prod  staging\n\nterraform/modules:\ncloudsql  gke  network  workload-identity"),
            ("Grep", Grep("kind: SealedSecret", f"{root}/k8s", output_mode="files_with_matches"),
             "Found 9 files\nk8s/apps/orders/overlays/dev/db-credentials.sealed.yaml\nk8s/apps/orders/overlays/prod/db-credentials.sealed.yaml\nk8s/apps/orders/overlays/staging/db-credentials.sealed.yaml\nk8s/apps/billing/overlays/dev/stripe.sealed.yaml\nk8s/apps/billing/overlays/prod/stripe.sealed.yaml\nk8s/apps/billing/overlays/staging/stripe.sealed.yaml\nk8s/apps/dispatch/overlays/dev/maps-api-key.sealed.yaml\nk8s/apps/dispatch/overlays/prod/maps-api-key.sealed.yaml\nk8s/apps/dispatch/overlays/staging/maps-api-key.sealed.yaml")])
    S.asst(r'''Nine SealedSecrets: three secrets (`db-credentials`, `stripe`, `maps-api-key`) × three environments. That's a small migration.

Plan:

1. **Terraform** (`terraform/modules/external-secrets`):
   - one `google_secret_manager_secret` per secret per env (values added out of band with `gcloud secrets versions add`, never in state)
   - a GSA `eso-<env>` with `roles/secretmanager.secretAccessor` on just those secrets
   - Workload Identity binding from the `external-secrets/external-secrets` KSA to that GSA
2. **Platform** (`k8s/platform/external-secrets`): an Argo CD `Application` for the ESO Helm chart, and a `ClusterSecretStore` pointing at the env's project.
3. **Apps**: replace each `*.sealed.yaml` with an `ExternalSecret` that produces a Secret with the same name and keys, so Deployments don't change.
4. Once all three envs are synced, delete `k8s/platform/sealed-secrets` and the controller.

Order: dev first, check the pods restart cleanly with the ESO-managed secrets, then staging, then prod.''')
    S.user("Somebody in #platform suggested Vault instead. Is that worth it?")
    S.asst(r'''For your setup, I don't think so. Vault gives you dynamic database credentials, PKI, and secrets that work across clouds. But you'd be running a stateful, HA service (raft storage, unseal keys or KMS auto-unseal, upgrades, audit logs) for three application secrets per environment, all on GCP. Secret Manager is managed, IAM-native, versioned and audit-logged already, and ESO can switch backends later if you ever outgrow it.''')
    S.user("Yeah no, Vault is way too much ops for the three of us. Stick with the plan. Start with the terraform side.")
    S.trap("Vault suggested in #platform — rejected ('way too much ops')")
    dev_main = r'''module "gke" {
  source     = "../../modules/gke"
  project_id = var.project_id
  region     = "europe-west3"
  name       = "kestrel-dev"
  labels = {
    team        = "platform"
    env         = "dev"
    cost-center = "cc-4410"
  }
}

module "orders_db" {
  source     = "../../modules/cloudsql"
  project_id = var.project_id
  name       = "orders-dev"
  tier       = "db-custom-1-3840"
  labels = {
    team        = "orders"
    env         = "dev"
    cost-center = "cc-4420"
  }
}'''
    S.asst("",
           [("Read", Read(f"{root}/terraform/envs/dev/main.tf"), numbered(dev_main)),
            ("Write", Write(f"{root}/terraform/modules/external-secrets/main.tf", "resource \"google_secret_manager_secret\" \"this\" {\n  for_each  = toset(var.secret_ids)\n  project   = var.project_id\n  secret_id = each.value\n\n  replication {\n    auto {}\n  }\n}\n\nresource \"google_service_account\" \"eso\" {\n  project      = var.project_id\n  account_id   = \"eso-${var.env}\"\n  display_name = \"External Secrets Operator (${var.env})\"\n}\n\nresource \"google_secret_manager_secret_iam_member\" \"eso\" {\n  for_each  = google_secret_manager_secret.this\n  project   = var.project_id\n  secret_id = each.value.secret_id\n  role      = \"roles/secretmanager.secretAccessor\"\n  member    = \"serviceAccount:${google_service_account.eso.email}\"\n}\n\nresource \"google_service_account_iam_member\" \"wi\" {\n  service_account_id = google_service_account.eso.name\n  role               = \"roles/iam.workloadIdentityUser\"\n  member             = \"serviceAccount:${var.project_id}.svc.id.goog[external-secrets/external-secrets]\"\n}\n"),
             created(f"{root}/terraform/modules/external-secrets/main.tf")),
            ("Bash", Bash("terraform -chdir=terraform/envs/dev plan -no-color -target=module.external_secrets 2>&1 | tail -30", "Plan the new module in dev"),
             "Terraform will perform the following actions:\n\n  # module.external_secrets.google_secret_manager_secret.this[\"maps-api-key\"] will be created\n  + resource \"google_secret_manager_secret\" \"this\" {\n      + effective_labels = (known after apply)\n      + id               = (known after apply)\n      + project          = \"kestrel-dev-2231\"\n      + secret_id        = \"maps-api-key\"\n      + terraform_labels = (known after apply)\n\n      + replication {\n          + auto {}\n        }\n    }\n\n  # (2 more google_secret_manager_secret resources)\n\n  # module.external_secrets.google_service_account.eso will be created\n  + resource \"google_service_account\" \"eso\" {\n      + account_id   = \"eso-dev\"\n      + display_name = \"External Secrets Operator (dev)\"\n      + email        = (known after apply)\n    }\n\nPlan: 8 to add, 0 to change, 0 to destroy.\n\nWarning: Resource targeting is in effect")])
    S.asst(r'''The plan is clean: 8 resources to add (3 secrets, 3 IAM bindings on them, the GSA and the Workload Identity binding), nothing changed or destroyed. The secrets are created empty; values get added with:

```bash
gcloud secrets versions add maps-api-key --project kestrel-dev-2231 --data-file=-
```

so they never show up in Terraform state.''')
    S.user("the secrets are missing labels. Every GCP resource gets team, env and cost-center labels, the billing export is broken down by them. "
           "Add them. Side question: do we even have budget alerts on the dev project?",
           mems=[("convention", "Every GCP resource gets the labels team, env and cost-center (billing export is broken down by them).",
                  ["labels", "cost-center"])])
    S.trap("'do we even have budget alerts on the dev project?' — question")
    S.asst("Adding a `labels` variable to the module and checking for budgets.",
           [("Edit", Edit(f"{root}/terraform/modules/external-secrets/main.tf", "  secret_id = each.value\n\n  replication {", "  secret_id = each.value\n  labels    = var.labels\n\n  replication {"),
             edited(f"{root}/terraform/modules/external-secrets/main.tf", "resource \"google_secret_manager_secret\" \"this\" {\n  for_each  = toset(var.secret_ids)\n  project   = var.project_id\n  secret_id = each.value\n  labels    = var.labels\n\n  replication {", 1)),
            ("Grep", Grep("google_billing_budget", f"{root}/terraform"), "No matches found")])
    S.asst(r'''Labels are wired through: `module "external_secrets"` in `envs/dev` passes `{ team = "platform", env = "dev", cost-center = "cc-4410" }`. (Service accounts and IAM members don't support labels in GCP, so only the secrets get them.)

On budgets: there's no `google_billing_budget` anywhere in the repo, so if one exists it was created by hand in the console.

Now the cluster side. For the store, the ESO docs say:

> We recommend using a namespaced `SecretStore` per tenant namespace in multi-tenant clusters; a `ClusterSecretStore` is appropriate when a single team operates the cluster.

You're one team, so I'll use a single `ClusterSecretStore`:''',
           [("Write", Write(f"{root}/k8s/platform/external-secrets/cluster-secret-store.yaml", "apiVersion: external-secrets.io/v1beta1\nkind: ClusterSecretStore\nmetadata:\n  name: gcp-secret-manager\nspec:\n  provider:\n    gcpsm:\n      projectID: kestrel-dev-2231\n      auth:\n        workloadIdentity:\n          clusterLocation: europe-west3\n          clusterName: kestrel-dev\n          serviceAccountRef:\n            name: external-secrets\n            namespace: external-secrets\n"),
             created(f"{root}/k8s/platform/external-secrets/cluster-secret-store.yaml"))])
    S.trap("quoted External Secrets docs 'We recommend using a namespaced SecretStore per tenant namespace' — quoted documentation")
    S.asst(r'''Store manifest is in. Before migrating `db-credentials` for orders, I'd like to confirm the password in the sealed secret still matches the database, since it was last rotated in January. I can connect to the prod `orders-prod` Cloud SQL instance on its public IP with `psql` and try it.''')
    S.user("prod's Cloud SQL has no public IP, it's private IP only — you'd have to go through the cloud-sql-proxy on the bastion. But don't bother verifying now.",
           mems=[("fact", "Prod Cloud SQL has no public IP (private IP only); access goes through the cloud-sql-proxy on the bastion.",
                  ["Cloud SQL", "private"])])
    S.trap("assistant's plan to connect to prod Cloud SQL over a public IP to verify the password — rejected")
    S.asst(r'''OK, skipping the check. The `ExternalSecret` for orders keeps the Secret name and keys, so the Deployment doesn't change:

```yaml
apiVersion: external-secrets.io/v1beta1
kind: ExternalSecret
metadata:
  name: db-credentials
  namespace: orders
spec:
  refreshInterval: 1h
  secretStoreRef:
    kind: ClusterSecretStore
    name: gcp-secret-manager
  target:
    name: db-credentials
    creationPolicy: Owner
  data:
    - secretKey: DATABASE_PASSWORD
      remoteRef:
        key: orders-db-password
```

Once it syncs in dev, I could apply the prod version straight onto the prod cluster by hand to test it right away, instead of waiting for the PR to merge.''')
    S.user("No. Nobody touches prod with kubectl apply or kubectl edit, ever. Every change goes through Argo CD, that's the whole point of GitOps. "
           "Apply the terraform to dev now and I'll open the PR.",
           mems=[("antipattern", "Never change prod by hand with kubectl apply/edit; every change goes through Argo CD (GitOps).",
                  ["kubectl", "Argo CD"])])
    S.trap("assistant's offer to apply the manifest to the prod cluster by hand — rejected")
    S.trap("'Apply the terraform to dev now' — instruction for the moment")
    S.asst("",
           [("Bash", Bash("terraform -chdir=terraform/envs/dev apply -no-color -auto-approve -target=module.external_secrets 2>&1 | tail -4", "Apply the external-secrets module to dev"),
             "module.external_secrets.google_service_account_iam_member.wi: Creation complete after 9s [id=projects/kestrel-dev-2231/serviceAccounts/eso-dev@kestrel-dev-2231.iam.gserviceaccount.com/roles/iam.workloadIdentityUser/serviceAccount:kestrel-dev-2231.svc.id.goog[external-secrets/external-secrets]]\n\nWarning: Applied changes may be incomplete\n\nApply complete! Resources: 8 added, 0 changed, 0 destroyed.")])
    S.asst(r'''Applied to dev: 8 resources added. Remaining for the PR:

- `k8s/platform/external-secrets/application.yaml` (Argo CD app for the ESO chart, pinned to 0.10.x)
- `ExternalSecret` manifests replacing the three dev `*.sealed.yaml` files
- secret values: `gcloud secrets versions add` for `orders-db-password`, `stripe-api-key`, `maps-api-key` in `kestrel-dev-2231`

After Argo CD syncs dev and the pods come up with the new secrets, staging and prod follow the same pattern, and `k8s/platform/sealed-secrets` can be deleted.''')
    return S


# =============================================================================
# session-07  ASR fine-tuning: NaNs, bf16, scratch, wandb, test split
# =============================================================================
def s07():
    root = "/home/rafael/asr-finetune"
    S = Session(7, "en", root, "exp/run17-nan", "2026-04-07T22:14:31.950", version="2.0.33", model="claude-opus-4-1-20250805")
    cfg = r'''model:
  name: openai/whisper-large-v3
  freeze_encoder_layers: 16
data:
  train: /data/callcenter/v3/train.jsonl
  val: /data/callcenter/v3/val.jsonl
  test: /data/callcenter/v3/test.jsonl
  max_audio_s: 30
train:
  output_dir: /scratch/rafael/runs/17
  per_device_batch_size: 8
  grad_accum: 4
  lr: 3.0e-5
  warmup_steps: 500
  max_steps: 20000
  fp16: true
  bf16: false
  max_grad_norm: 0.0
  save_every: 1000
  eval_every: 1000
logging:
  report_to: wandb'''
    S.user("Run 17 diverged again around step 6k — loss goes to nan. Tail of the log:\n\n"
           "```\nstep 5950 | loss 0.4121 | lr 2.71e-05 | grad_norm 3.8 | scale 65536\n"
           "step 6000 | loss 0.4093 | lr 2.71e-05 | grad_norm 7.9 | scale 65536\n"
           "step 6050 | loss 1.8830 | lr 2.70e-05 | grad_norm 412.5 | scale 32768\n"
           "step 6100 | loss nan | lr 2.70e-05 | grad_norm nan | scale 1\n```\n\n"
           "can you look at configs/train_large.yaml and see what's going on?")
    S.asst("Let me read the config and the precision setup in train.py.",
           [("Read", Read(f"{root}/configs/train_large.yaml"), numbered(cfg)),
            ("Grep", Grep("autocast|GradScaler|clip_grad", f"{root}/train.py"),
             "train.py:141:    scaler = torch.cuda.amp.GradScaler(enabled=cfg.train.fp16)\n"
             "train.py:188:        with torch.autocast(\"cuda\", dtype=torch.float16, enabled=cfg.train.fp16):\n"
             "train.py:197:        if cfg.train.max_grad_norm > 0:\n"
             "train.py:198:            torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.train.max_grad_norm)")])
    S.asst(r'''The log tells the story: `grad_norm` jumps from 7.9 to 412 at step 6050, the GradScaler halves the scale to 32768, and by 6100 everything is `nan` with the scale collapsed to 1. Two things in the config make this likely:

1. **`fp16: true`** — float16 has a max of ~65504. Whisper-large's decoder attention logits and the final-layer activations can exceed that on long, noisy call-center clips; once one overflows to `inf`, the loss becomes `nan`. The scaler only protects gradients, not the forward pass.
2. **`max_grad_norm: 0.0`** — clipping is disabled (line 197 skips it), so a single bad batch produces a huge update.

Options:

- **Switch to bf16.** Same 16-bit memory and speed on A100s, but the same exponent range as fp32, so forward-pass overflow essentially disappears and you don't need a GradScaler at all.
- **Keep fp16** and turn on clipping plus a lower initial scale; this usually delays the problem rather than removing it.

Either way I'd set `max_grad_norm: 1.0`.

```yaml
train:
  fp16: false
  bf16: true
  max_grad_norm: 1.0
```''')
    S.user("would FSDP help here? the model barely fits as it is")
    S.trap("'would FSDP help here?' — question, FSDP then set aside")
    S.asst(r'''FSDP addresses memory, not the NaN. It shards parameters, gradients and optimizer state across the 8 GPUs, which would free roughly 60–70% of the per-GPU memory now spent on optimizer state for a 1.5B model, so you could raise `per_device_batch_size` or stop freezing encoder layers. But the divergence comes from fp16 range and unclipped updates; FSDP in fp16 would diverge just the same.

If memory is the next bottleneck after fixing precision, FSDP with `ShardingStrategy.SHARD_GRAD_OP` is the least invasive step. I wouldn't do both changes in the same run, or you won't know which one helped.''')
    S.user("ok forget FSDP for now. Let's standardize on bf16 mixed precision — fp16 is what gave us these NaNs, and the last two too. "
           "If we had H100s we could even try fp8, but whatever. Turn on clipping at 1.0 as well.",
           mems=[("decision", "Standardize on bf16 mixed precision for training (not fp16, which caused the NaN divergences).",
                  ["bf16", "mixed precision"])])
    S.trap("'If we had H100s we could even try fp8' — hypothetical")
    S.asst("",
           [("Edit", Edit(f"{root}/configs/train_large.yaml", "  fp16: true\n  bf16: false\n  max_grad_norm: 0.0", "  fp16: false\n  bf16: true\n  max_grad_norm: 1.0"),
             edited(f"{root}/configs/train_large.yaml", "  max_steps: 20000\n  fp16: false\n  bf16: true\n  max_grad_norm: 1.0\n  save_every: 1000", 17)),
            ("Edit", Edit(f"{root}/train.py", "        with torch.autocast(\"cuda\", dtype=torch.float16, enabled=cfg.train.fp16):", "        amp_dtype = torch.bfloat16 if cfg.train.bf16 else torch.float16\n        with torch.autocast(\"cuda\", dtype=amp_dtype, enabled=cfg.train.bf16 or cfg.train.fp16):"),
             edited(f"{root}/train.py", "        amp_dtype = torch.bfloat16 if cfg.train.bf16 else torch.float16\n        with torch.autocast(\"cuda\", dtype=amp_dtype, enabled=cfg.train.bf16 or cfg.train.fp16):", 188))])
    S.asst(r'''Config and autocast now use bfloat16 when `bf16: true`; the GradScaler stays disabled because it's keyed on `fp16`. Clipping is at 1.0.

One thing I noticed in the config while editing: `output_dir: /scratch/rafael/runs/17`. Checkpoints every 1000 steps go there. Is `/scratch` persistent storage on this cluster?''')
    S.user("good catch — /scratch gets wiped every Sunday night, so checkpoints have to go to /data/ckpt. Change it.",
           mems=[("fact", "/scratch on the training cluster is wiped every Sunday night; checkpoints must go to /data/ckpt.",
                  ["scratch", "Sunday"])])
    S.asst("",
           [("Edit", Edit(f"{root}/configs/train_large.yaml", "  output_dir: /scratch/rafael/runs/17", "  output_dir: /data/ckpt/rafael/run17b"),
             edited(f"{root}/configs/train_large.yaml", "train:\n  output_dir: /data/ckpt/rafael/run17b\n  per_device_batch_size: 8", 10)),
            ("Bash", Bash("ls -la /scratch/rafael/runs/17 | tail -4 && df -h /data | tail -1 && sed -n 60,72p train.py", "Check existing checkpoints, disk space, and logging setup"),
             "drwxr-xr-x  2 rafael ml 4096 Apr  7 19:02 checkpoint-4000\ndrwxr-xr-x  2 rafael ml 4096 Apr  7 20:11 checkpoint-5000\ndrwxr-xr-x  2 rafael ml 4096 Apr  7 21:20 checkpoint-6000\n-rw-r--r--  1 rafael ml  18K Apr  7 21:58 trainer_log.jsonl\nnfs-ml:/export/data  120T   81T   39T  68% /data\n"
             "def setup_logging(cfg):\n    if cfg.logging.report_to == \"wandb\":\n        wandb.init(\n            project=os.environ.get(\"WANDB_PROJECT\", \"scratch-experiments\"),\n            name=f\"run-{cfg.run_id}\",\n            config=OmegaConf.to_container(cfg, resolve=True),\n        )\n")])
    S.asst(r'''`/data` has 39T free, fine for checkpoints. Since checkpoint-6000 of run 17 was written after the divergence started, checkpoint-5000 is the last clean one; I'd copy it to `/data/ckpt` before Sunday.

Two more things:

1. **wandb project.** `setup_logging` falls back to `scratch-experiments` unless `WANDB_PROJECT` is set, and the run config doesn't record which code produced it. Comparing runs 12–17 in wandb is guesswork right now.
2. **Gradient checkpointing.** With bf16 you could enable `model.gradient_checkpointing_enable()` and unfreeze more encoder layers or double the batch size. It trades roughly 20–30% step time for a large activation-memory saving.''')
    S.user("gradient checkpointing — no, it slows the step too much and memory's ok with bf16. But yes, fix the wandb thing: every run logs to the "
           "asr-ft project in wandb, with the git SHA in the run config. Always, no env var fallback.",
           mems=[("convention", "Every training run logs to the wandb project asr-ft and records the git SHA in the run config.",
                  ["wandb", "git SHA"])])
    S.trap("assistant's suggestion to enable gradient checkpointing — declined")
    S.asst("",
           [("Edit", Edit(f"{root}/train.py",
                          "        wandb.init(\n            project=os.environ.get(\"WANDB_PROJECT\", \"scratch-experiments\"),\n            name=f\"run-{cfg.run_id}\",\n            config=OmegaConf.to_container(cfg, resolve=True),\n        )",
                          "        sha = subprocess.check_output([\"git\", \"rev-parse\", \"HEAD\"], text=True).strip()\n        dirty = bool(subprocess.check_output([\"git\", \"status\", \"--porcelain\"], text=True).strip())\n        run_cfg = OmegaConf.to_container(cfg, resolve=True)\n        run_cfg[\"git_sha\"] = sha\n        run_cfg[\"git_dirty\"] = dirty\n        wandb.init(project=\"asr-ft\", name=f\"run-{cfg.run_id}\", config=run_cfg)"),
             edited(f"{root}/train.py", "def setup_logging(cfg):\n    if cfg.logging.report_to == \"wandb\":\n        sha = subprocess.check_output([\"git\", \"rev-parse\", \"HEAD\"], text=True).strip()\n        dirty = bool(subprocess.check_output([\"git\", \"status\", \"--porcelain\"], text=True).strip())\n        run_cfg = OmegaConf.to_container(cfg, resolve=True)\n        run_cfg[\"git_sha\"] = sha\n        run_cfg[\"git_dirty\"] = dirty\n        wandb.init(project=\"asr-ft\", name=f\"run-{cfg.run_id}\", config=run_cfg)", 60))])
    S.asst(r'''Done; `git_dirty` is recorded too, so a run started from uncommitted changes is visible as such.

For the learning-rate question that started all this, I've drafted a sweep. The sweep picks the winner on the held-out test WER so we get the number we'll actually report:

```yaml
# sweeps/lr.yaml
program: train.py
method: bayes
metric:
  name: test/wer
  goal: minimize
parameters:
  train.lr:
    distribution: log_uniform_values
    min: 5.0e-6
    max: 5.0e-5
  train.warmup_steps:
    values: [250, 500, 1000]
```''')
    S.user("don't ever use the test split in sweeps. Sweeps select on val/wer; the test split is only for the final numbers in the report. "
           "Change that, then kill run 17 and relaunch it from the step-5000 checkpoint with the new config.",
           mems=[("antipattern", "Never use the test split in hyperparameter sweeps; sweeps select on val WER and the test split is only for final reported numbers.",
                  ["test split", "sweeps"])])
    S.trap("assistant's sweep config selecting on test/wer — rejected")
    S.trap("'kill run 17 and relaunch it from the step-5000 checkpoint' — instruction for the moment")
    S.asst("",
           [("Edit", Edit(f"{root}/sweeps/lr.yaml", "  name: test/wer", "  name: val/wer"),
             edited(f"{root}/sweeps/lr.yaml", "metric:\n  name: val/wer\n  goal: minimize", 4)),
            ("Bash", Bash("scancel $(squeue -u rafael -n asr-run17 -h -o %i) && mkdir -p /data/ckpt/rafael/run17b && cp -r /scratch/rafael/runs/17/checkpoint-5000 /data/ckpt/rafael/run17b/ && sbatch --job-name=asr-run17b slurm/train.sbatch configs/train_large.yaml --resume /data/ckpt/rafael/run17b/checkpoint-5000",
                          "Cancel run 17 and relaunch from checkpoint 5000"),
             "Submitted batch job 884213")])
    S.asst(r'''Run 17 is cancelled and `asr-run17b` (job 884213) is queued, resuming from checkpoint-5000 with bf16, clipping at 1.0, checkpoints in `/data/ckpt/rafael/run17b`, logging to `asr-ft` with the git SHA.

What to watch in the first hour: `grad_norm` should stay in single digits; with clipping it can't exceed 1.0 post-clip, but the pre-clip value tells you whether the spikes are still there. If it passes step 6100 cleanly, I'd launch the sweep on val/wer next.''')
    return S


# =============================================================================
# session-08  MkDocs Material docs site: versioning with mike, style
# =============================================================================
def s08():
    root = "/home/noor/quarry"
    S = Session(8, "en", root, "docs/versioning", "2026-04-13T14:48:02.337", version="2.0.35")
    mk = r'''site_name: Quarry
site_url: https://quarry.dev/docs/
repo_url: https://github.com/quarry-sql/quarry
theme:
  name: material
  features:
    - navigation.tabs
    - navigation.sections
    - content.code.copy
    - search.suggest
plugins:
  - search
  - macros
  - mkdocstrings:
      handlers:
        python:
          options:
            show_source: false
markdown_extensions:
  - admonition
  - pymdownx.details
  - pymdownx.superfences
  - toc:
      permalink: true
nav:
  - Home: index.md
  - Getting Started:
      - Install: install.md
      - First Query: first-query.md
  - Guides: guides/
  - API Reference: reference/'''
    S.user("We need versioned docs before 3.0 ships — people on 2.x keep reading the 3.0 docs on main and filing bugs about "
           "methods that don't exist for them. Site is mkdocs-material, config in mkdocs.yml. What are our options?")
    S.asst("Let me look at the config and how the docs are built and published.",
           [("Read", Read(f"{root}/mkdocs.yml"), numbered(mk)),
            ("Bash", Bash("ls docs docs/guides | head -30 && find docs -name '*.md' | wc -l && cat .github/workflows/docs.yml | sed -n 1,40p", "Inspect docs tree and workflow"),
             "docs:\nCHANGELOG.md\nguides\nindex.md\ninstall.md\nfirst-query.md\nreference\n\ndocs/guides:\nJoins And Subqueries.md\nconnection-pooling.md\nmigrations-from-2x.md\nraw-sql.md\ntransactions.md\n142\n"
             "name: docs\non:\n  push:\n    branches: [main]\njobs:\n  deploy:\n    runs-on: ubuntu-latest\n    steps:\n      - uses: actions/checkout@v4\n      - uses: actions/setup-python@v5\n        with: { python-version: \"3.12\" }\n      - run: pip install -r docs/requirements.txt\n      - run: mkdocs gh-deploy --force")])
    S.asst(r'''Current setup: every push to `main` runs `mkdocs gh-deploy --force`, which overwrites the whole `gh-pages` branch with a build of `main`. There's only ever one version online, and it's whatever is on main.

Options:

1. **mike** — I'd suggest we use mike to publish versioned docs. It's the tool Material for MkDocs integrates with: each release is deployed into its own folder on `gh-pages` (`/2.9/`, `/3.0/`), aliases like `latest` and `dev` point at versions, and Material shows a version selector in the header:

   ```yaml
   # mkdocs.yml
   extra:
     version:
       provider: mike
       default: latest
   ```

   ```bash
   mike deploy --push --update-aliases 2.9 latest   # on a 2.9 release tag
   mike deploy --push dev                           # on every push to main
   ```

2. **Separate sites per major** (`v2.quarry.dev`, `v3.quarry.dev`) built from release branches. No tooling, but two deploy configs and no cross-version switcher.
3. **Move to a generator with built-in versioning** (Docusaurus snapshots `docs/` into `versioned_docs/version-X`).

The first is the smallest change: the workflow swaps `mkdocs gh-deploy` for two `mike deploy` steps, and existing URLs keep working via a redirect from `/` to `/latest/`.''')
    S.user("should we just move to Docusaurus? it does versioning natively and the React ecosystem is bigger")
    S.asst(r'''I'd be careful: the migration cost is mostly in things you'd lose.

- **mkdocstrings**: the whole `reference/` section (about 60 of the 142 pages) is generated from Quarry's docstrings. Docusaurus has no equivalent for Python; you'd need a separate pipeline (e.g. `pydoc-markdown`) emitting MDX and it's notably worse at cross-references.
- **macros**: `{{ version }}` and the feature-matrix macros would become React components.
- **admonitions / superfences** syntax differs, so every page needs rewriting.

Docusaurus versioning also snapshots the whole docs tree per version, so the repo grows by a full copy of the docs every release.''')
    S.user("Right, mkdocstrings alone kills that idea. ok, yes, do that — mike.",
           mems=[])
    S.memories.append((len(S.entries) - 4, "decision",
                       "Use mike to publish versioned docs (one folder per release on gh-pages, latest/dev aliases); stay on MkDocs Material rather than moving to Docusaurus.",
                       ["mike", "versioned"]))
    S.trap("'should we just move to Docusaurus?' — question; option rejected")
    S.asst("Switching the workflow to mike and adding the version provider.",
           [("Edit", Edit(f"{root}/mkdocs.yml", "markdown_extensions:", "extra:\n  version:\n    provider: mike\n    default: latest\n\nmarkdown_extensions:"),
             edited(f"{root}/mkdocs.yml", "            show_source: false\nextra:\n  version:\n    provider: mike\n    default: latest\n\nmarkdown_extensions:", 19)),
            ("Edit", Edit(f"{root}/.github/workflows/docs.yml", "      - run: mkdocs gh-deploy --force",
                          "      - run: git fetch origin gh-pages --depth=1\n      - run: git config user.name ci-bot && git config user.email ci@quarry.dev\n      - if: startsWith(github.ref, 'refs/tags/v')\n        run: mike deploy --push --update-aliases ${GITHUB_REF_NAME#v} latest\n      - if: github.ref == 'refs/heads/main'\n        run: mike deploy --push dev"),
             edited(f"{root}/.github/workflows/docs.yml", "on:\n  push:\n    branches: [main]\n    tags: ['v*']", 2)),
            ("Bash", Bash("mkdocs build --strict 2>&1 | tail -8", "Strict build to catch warnings"),
             "INFO    -  Cleaning site directory\nINFO    -  Building documentation to directory: /home/noor/quarry/site\nWARNING -  Doc file 'install.md' contains a link 'setup.md#database-drivers', but the target 'setup.md' is not found among documentation files.\nWARNING -  Doc file 'guides/raw-sql.md' contains a link '../reference/quarry/expr.md#quarry.expr.Raw', but the doc 'reference/quarry/expr.md' does not contain an anchor '#quarry.expr.Raw'.\n\nAborted with 2 warnings in strict mode!", True)])
    S.asst(r'''The workflow now deploys `dev` from main and `X.Y` + `latest` from tags. The strict build fails on two pre-existing broken links (unrelated to versioning):

- `install.md` → `setup.md#database-drivers` (`setup.md` was renamed to `install.md` at some point)
- `guides/raw-sql.md` → `#quarry.expr.Raw` (the class is `RawExpr` since 2.6)

Before I touch pages, let me check the contributor guide for the style rules, since the 3.0 guides look inconsistent (`Joins And Subqueries.md` vs `connection-pooling.md`, headings in mixed case).''',
           [("Read", Read(f"{root}/CONTRIBUTING.md"),
             numbered("## Writing docs\n\n- Headings use Title Case (we decided this in 2021 to match the API reference).\n- Page file names are kebab-case.\n- Use **Note:** at the start of a paragraph for callouts.\n- Code samples must run against the current release.", 31))])
    S.trap("CONTRIBUTING.md tool output 'Headings use Title Case (we decided this in 2021 ...)' and 'Use **Note:** for callouts' — stale doc text")
    S.asst(r'''CONTRIBUTING says Title Case headings and bold `**Note:**` callouts, but most pages written since 2.6 use sentence-case headings (`## Connection pooling with asyncpg`) and a few use `!!! note` admonitions. Which is the rule going forward? I'll make the new version banner and the migration guide match.''')
    S.user("CONTRIBUTING is out of date, sorry. Headings are sentence case — first word and proper nouns capitalized, nothing else. "
           "And I'd rather we use admonitions (!!! note / !!! warning) than bold Note: paragraphs, they actually stand out. Update CONTRIBUTING while you're at it.",
           mems=[("convention", "Docs headings use sentence case (only the first word and proper nouns capitalized).",
                  ["sentence case", "headings"]),
                 ("preference", "Prefers admonitions (!!! note / !!! warning) over bold 'Note:' paragraphs for callouts.",
                  ["admonitions", "Note"])])
    S.asst("",
           [("Edit", Edit(f"{root}/CONTRIBUTING.md",
                          "- Headings use Title Case (we decided this in 2021 to match the API reference).\n- Page file names are kebab-case.\n- Use **Note:** at the start of a paragraph for callouts.",
                          "- Headings use sentence case: capitalize the first word and proper nouns only.\n- Page file names are kebab-case.\n- Callouts use admonitions (`!!! note`, `!!! warning`, `!!! tip`), not bold \"Note:\" paragraphs."),
             edited(f"{root}/CONTRIBUTING.md", "## Writing docs\n\n- Headings use sentence case: capitalize the first word and proper nouns only.\n- Page file names are kebab-case.\n- Callouts use admonitions (`!!! note`, `!!! warning`, `!!! tip`), not bold \"Note:\" paragraphs.", 31))])
    S.asst(r'''CONTRIBUTING is updated. A couple of optional extras while we're here:

- Material's docs say: *"We recommend enabling `navigation.instant` — it makes the site behave like a single-page application and preserves the version selector state between pages."* It's one line in `theme.features`.
- I can write a small script that rewrites every Title Case heading to sentence case across the 142 pages and renames `guides/Joins And Subqueries.md` to kebab-case (with a redirect).

Should I do either?''')
    S.trap("quoted Material docs 'We recommend enabling navigation.instant' and the assistant's offer to enable it — declined")
    S.user("navigation.instant — not now. The bulk heading rewrite, later, separate PR. Just fix the broken link in install.md for now so the strict build goes green. "
           "Someone also asked whether we'd translate the docs to Japanese eventually; not today's problem.")
    S.trap("'Just fix the broken link in install.md for now' — instruction for the moment")
    S.trap("translating the docs to Japanese — mentioned, explicitly not decided")
    S.asst("",
           [("Edit", Edit(f"{root}/docs/install.md", "[database drivers](setup.md#database-drivers)", "[database drivers](#database-drivers)"),
             edited(f"{root}/docs/install.md", "Quarry talks to Postgres through one of the supported\n[database drivers](#database-drivers). Install the extra you need:", 14)),
            ("Edit", Edit(f"{root}/docs/guides/raw-sql.md", "#quarry.expr.Raw", "#quarry.expr.RawExpr"),
             edited(f"{root}/docs/guides/raw-sql.md", "Use [`RawExpr`](../reference/quarry/expr.md#quarry.expr.RawExpr) when a fragment", 22)),
            ("Bash", Bash("mkdocs build --strict 2>&1 | tail -2", "Strict build again"),
             "INFO    -  Building documentation to directory: /home/noor/quarry/site\nINFO    -  Documentation built in 6.41 seconds")])
    S.asst(r'''Strict build is green. I also fixed the `RawExpr` anchor since the strict build would have kept failing on it.

On this branch:
- `mkdocs.yml`: `extra.version.provider: mike`
- `.github/workflows/docs.yml`: `mike deploy dev` on main, `mike deploy X.Y latest` on `v*` tags
- `CONTRIBUTING.md`: sentence-case headings, admonitions for callouts
- two broken links fixed

After merging, someone with push rights should run `mike deploy --push --update-aliases 2.9 latest` once from the `v2.9.4` tag and `mike set-default --push latest`, so 2.x users land on 2.9 docs until 3.0 is tagged.''')
    return S


# =============================================================================
# session-09  Django clinic scheduling: double booking, slots, signals
# =============================================================================
def s09():
    root = "/home/olu/medibook"
    S = Session(9, "en", root, "fix/double-booking", "2026-04-20T07:55:13.604", version="2.0.36")
    forms = r'''class AppointmentForm(forms.ModelForm):
    class Meta:
        model = Appointment
        fields = ["practitioner", "patient", "starts_at", "duration_min", "reason"]

    def clean(self):
        cleaned = super().clean()
        start = cleaned.get("starts_at")
        dur = cleaned.get("duration_min")
        prac = cleaned.get("practitioner")
        if start and dur and prac:
            end = start + timedelta(minutes=dur)
            # we decided to handle overlaps in clean() so the admin gets nice errors
            clash = Appointment.objects.filter(
                practitioner=prac,
                starts_at__lt=end,
                ends_at__gt=start,
                status__in=["booked", "confirmed"],
            ).exists()
            if clash:
                raise ValidationError("This practitioner already has an appointment at that time.")
        return cleaned'''
    signals = r'''@receiver(post_save, sender=Appointment)
def appointment_saved(sender, instance, created, **kwargs):
    if created:
        send_confirmation_sms.delay(instance.pk)
    # keep the availability cache in sync
    recompute_availability(instance.practitioner_id, instance.starts_at.date())
    if instance.status == "cancelled":
        offer_slot_to_waitlist(instance)'''
    S.user("Two patients got booked into the same 10:00 slot with Dr. Haddad yesterday. The overlap check lives in the booking form, I think. Can you find it?")
    S.asst("",
           [("Grep", Grep("overlap|clash", f"{root}/medibook", glob="*.py"),
             "medibook/bookings/forms.py:41:            # we decided to handle overlaps in clean() so the admin gets nice errors\n"
             "medibook/bookings/forms.py:42:            clash = Appointment.objects.filter(\n"
             "medibook/bookings/forms.py:48:            if clash:\n"
             "medibook/bookings/api/serializers.py:77:        # TODO overlap check? form handles it\n"
             "medibook/availability/slots.py:19:def overlaps(a_start, a_end, b_start, b_end):")])
    S.trap("code comment in grep output 'we decided to handle overlaps in clean() so the admin gets nice errors' — stale comment inside tool output")
    S.asst("The check is in `AppointmentForm.clean()`, and the API serializer has a TODO saying it relies on the form. Let me read both the form and the signals, since bookings trigger side effects.",
           [("Read", Read(f"{root}/medibook/bookings/forms.py"), numbered(forms, 28)),
            ("Read", Read(f"{root}/medibook/bookings/signals.py"), numbered(signals, 12))])
    S.asst(r'''Two ways to get a double booking here, and yesterday's was probably the first:

1. **The mobile app books through the API**, and `AppointmentSerializer` never runs the form's `clean()` (that's the TODO on line 77). API bookings have no overlap check at all.
2. **Race condition even in the form.** `clean()` does check-then-insert: two receptionists submitting at the same moment both see "no clash" and both insert.

Adding the check to the serializer fixes (1) but not (2). The robust fix is to make the database refuse overlaps. I'd suggest adding a Postgres exclusion constraint so double booking is impossible at the database level, whatever path the booking takes:

```python
from django.contrib.postgres.constraints import ExclusionConstraint
from django.contrib.postgres.fields import RangeOperators
from django.db.models import Q

class Appointment(models.Model):
    ...
    class Meta:
        constraints = [
            ExclusionConstraint(
                name="no_overlapping_appointments",
                expressions=[
                    ("practitioner", RangeOperators.EQUAL),
                    (TsTzRange("starts_at", "ends_at", RangeBoundary()), RangeOperators.OVERLAPS),
                ],
                condition=Q(status__in=["booked", "confirmed"]),
            ),
        ]
```

It needs the `btree_gist` extension (for the `=` on `practitioner_id` inside a GiST index), which is one `BtreeGistExtension()` operation in the migration. The form and serializer then catch `IntegrityError` and turn it into the same friendly message.''')
    S.user("What about just select_for_update on the practitioner row in the view? Seems simpler.")
    S.asst(r'''It works only if *every* code path that creates or moves an appointment takes that lock first: the form view, the API, the admin, the CSV import for the physio group, the rescheduling endpoint, and any management command someone writes next year. Miss one and you're back here. It also serializes all bookings per practitioner through a row lock, which is fine at your volume but easy to get wrong with long transactions.

The constraint is enforced by Postgres regardless of which path wrote the row, and it's one migration.''')
    S.user("fair. yes, do that, the constraint. Does Django 5 support db_default btw? Saw it in the release notes.")
    S.memories.append((len(S.entries) - 4, "decision",
                       "Prevent double booking with a Postgres exclusion constraint (btree_gist) on practitioner + time range, not select_for_update locks in views.",
                       ["exclusion constraint", "double booking"]))
    S.trap("select_for_update on the practitioner row — option considered and rejected")
    S.trap("'Does Django 5 support db_default btw?' — question")
    S.asst(r'''Yes — `Field.db_default` arrived in Django 5.0; it sets a `DEFAULT` in the database instead of only in Python. Handy for `created_at` with `Now()`. Not needed for this fix, though.

Adding the constraint:''',
           [("Edit", Edit(f"{root}/medibook/bookings/models.py", "        ordering = [\"starts_at\"]", "        ordering = [\"starts_at\"]\n        constraints = [\n            ExclusionConstraint(\n                name=\"no_overlapping_appointments\",\n                expressions=[\n                    (\"practitioner\", RangeOperators.EQUAL),\n                    (TsTzRange(\"starts_at\", \"ends_at\", RangeBoundary()), RangeOperators.OVERLAPS),\n                ],\n                condition=Q(status__in=[\"booked\", \"confirmed\"]),\n            ),\n        ]"),
             edited(f"{root}/medibook/bookings/models.py", "    class Meta:\n        ordering = [\"starts_at\"]\n        constraints = [\n            ExclusionConstraint(\n                name=\"no_overlapping_appointments\",", 61)),
            ("Bash", Bash("python manage.py makemigrations bookings && pytest -q medibook/bookings 2>&1 | tail -15", "Make migration and run booking tests"),
             "Migrations for 'bookings':\n  medibook/bookings/migrations/0031_appointment_no_overlapping_appointments.py\n    - Add constraint no_overlapping_appointments on model appointment\n"
             "........F.......\n=================================== FAILURES ===================================\n____________________________ test_slot_length_default ____________________________\n\n    def test_slot_length_default(clinic_factory):\n        for kind in [\"gp\", \"dental\", \"physio\"]:\n            clinic = clinic_factory(kind=kind)\n>           assert clinic.slot_minutes == 15\nE           AssertionError: assert 20 == 15\nE            +  where 20 = <Clinic: Riverside Physio>.slot_minutes\n\nmedibook/clinics/tests/test_slots.py:12: AssertionError\n1 failed, 15 passed in 3.88s", True)])
    S.asst(r'''The migration was generated, but I need to add `BtreeGistExtension()` as its first operation by hand; Django doesn't do that automatically.

One test fails, and it isn't related to the constraint: `test_slot_length_default` asserts every clinic kind has 15-minute slots, but the physio fixture returns 20. Looking at `clinics/defaults.py`, `SLOT_MINUTES = {"gp": 15, "dental": 15, "physio": 20}` was changed three weeks ago. Which one is right: should the test be updated, or was the physio value a mistake?''')
    S.user("The test is wrong. Slots are 15 minutes everywhere except the physio clinic, which runs 20-minute slots. Fix the test.",
           mems=[("fact", "Appointment slots are 15 minutes everywhere except the physio clinic, which uses 20-minute slots.",
                  ["physio", "20-minute"])])
    S.asst("",
           [("Edit", Edit(f"{root}/medibook/clinics/tests/test_slots.py",
                          "    for kind in [\"gp\", \"dental\", \"physio\"]:\n        clinic = clinic_factory(kind=kind)\n        assert clinic.slot_minutes == 15",
                          "    for kind, minutes in [(\"gp\", 15), (\"dental\", 15), (\"physio\", 20)]:\n        clinic = clinic_factory(kind=kind)\n        assert clinic.slot_minutes == minutes"),
             edited(f"{root}/medibook/clinics/tests/test_slots.py", "def test_slot_length_default(clinic_factory):\n    for kind, minutes in [(\"gp\", 15), (\"dental\", 15), (\"physio\", 20)]:\n        clinic = clinic_factory(kind=kind)\n        assert clinic.slot_minutes == minutes", 9)),
            ("Edit", Edit(f"{root}/medibook/bookings/migrations/0031_appointment_no_overlapping_appointments.py", "    operations = [", "    operations = [\n        BtreeGistExtension(),"),
             edited(f"{root}/medibook/bookings/migrations/0031_appointment_no_overlapping_appointments.py", "    operations = [\n        BtreeGistExtension(),\n        migrations.AddConstraint(", 14))])
    S.asst(r'''Test fixed and the extension added to the migration.

Next, the form and serializer need to turn the `IntegrityError` into a validation error. There's also the availability cache: `appointment_saved` in `signals.py` recomputes it on every save. I could also move the friendly overlap error into that `post_save` receiver, so that every path that saves an appointment (form, API, admin, import) reports it the same way without touching each caller.''')
    S.user("No more signals for business logic, please. Nobody can follow what happens on save anymore. Put the overlap handling and the "
           "availability recompute in BookingService and call it explicitly from the form view and the API. And regenerate the migration with a proper name, 0031_no_overlapping_appointments.",
           mems=[("antipattern", "Don't use Django signals for business logic; put it in services (e.g. BookingService) and call them explicitly.",
                  ["signals", "business logic"])])
    S.trap("assistant's idea to put the overlap error into the post_save receiver — rejected")
    S.trap("'regenerate the migration with a proper name, 0031_no_overlapping_appointments' — instruction for the moment")
    S.asst("",
           [("Write", Write(f"{root}/medibook/bookings/services.py", "from django.db import IntegrityError, transaction\n\nfrom medibook.availability.cache import recompute_availability\n\nfrom .models import Appointment\n\n\nclass SlotTaken(Exception):\n    pass\n\n\nclass BookingService:\n    @staticmethod\n    def book(**fields) -> Appointment:\n        try:\n            with transaction.atomic():\n                appt = Appointment.objects.create(**fields)\n        except IntegrityError as e:\n            if \"no_overlapping_appointments\" in str(e):\n                raise SlotTaken(\"This practitioner already has an appointment at that time.\") from e\n            raise\n        recompute_availability(appt.practitioner_id, appt.starts_at.date())\n        return appt\n"),
             created(f"{root}/medibook/bookings/services.py")),
            ("Bash", Bash("rm medibook/bookings/migrations/0031_appointment_no_overlapping_appointments.py && python manage.py makemigrations bookings --name no_overlapping_appointments --empty -v0 && python manage.py migrate -v0 && pytest -q medibook 2>&1 | tail -2",
                          "Regenerate migration with a proper name, migrate, run all tests"),
             "142 passed, 3 skipped in 11.07s")])
    S.asst(r'''All 142 tests pass against the new constraint (the migration `0031_no_overlapping_appointments` carries `BtreeGistExtension()` + `AddConstraint`).

Changes:
- `Appointment.Meta.constraints`: exclusion constraint `no_overlapping_appointments` on practitioner + `[starts_at, ends_at)` for booked/confirmed appointments.
- `BookingService.book()` creates the appointment, maps the constraint violation to `SlotTaken`, and recomputes availability explicitly. The form view and `AppointmentViewSet.create` call it.
- `signals.py`: the availability recompute is removed from `appointment_saved`; the confirmation SMS and waitlist offer are still there for now.
- `test_slots.py`: physio expects 20-minute slots.

Before deploying: the migration will fail if production already contains overlapping appointments (such as yesterday's pair with Dr. Haddad). This query lists them:

```sql
SELECT a.id, b.id, a.practitioner_id, a.starts_at
FROM bookings_appointment a
JOIN bookings_appointment b
  ON a.practitioner_id = b.practitioner_id AND a.id < b.id
 AND tstzrange(a.starts_at, a.ends_at) && tstzrange(b.starts_at, b.ends_at)
WHERE a.status IN ('booked','confirmed') AND b.status IN ('booked','confirmed');
```''')
    return S


# =============================================================================
# session-10  Vue 3 admin dashboard: charts, component naming, tokens
# =============================================================================
def s10():
    root = "/home/mei/shopfront-admin"
    S = Session(10, "en", root, "feat/sales-dashboard", "2026-04-28T11:20:44.019", version="2.0.37")
    chart_vue = r'''<script setup lang="ts">
import { onMounted, ref, watch } from "vue";
import { Chart, registerables } from "chart.js";

Chart.register(...registerables);

const props = defineProps<{ type: "line" | "bar"; labels: string[]; series: { name: string; data: number[] }[] }>();
const canvas = ref<HTMLCanvasElement>();
let chart: Chart | undefined;

function render() {
  chart?.destroy();
  chart = new Chart(canvas.value!, {
    type: props.type,
    data: { labels: props.labels, datasets: props.series.map((s) => ({ label: s.name, data: s.data })) },
    options: { animation: false, responsive: true },
  });
}
onMounted(render);
watch(() => props.series, render, { deep: true });
</script>

<template>
  <canvas ref="canvas" />
</template>'''
    pkg = r'''{
  "name": "shopfront-admin",
  "private": true,
  "type": "module",
  "scripts": {
    "dev": "vite",
    "build": "vue-tsc -b && vite build",
    "type-check": "vue-tsc --noEmit",
    "test": "vitest run"
  },
  "dependencies": {
    "chart.js": "^4.4.1",
    "pinia": "^2.2.6",
    "vue": "^3.5.13",
    "vue-router": "^4.4.5"
  },
  "devDependencies": {
    "@vitejs/plugin-vue": "^5.2.1",
    "typescript": "~5.6.3",
    "vite": "^6.0.5",
    "vitest": "^2.1.8",
    "vue-tsc": "^2.1.10"
  }
}'''
    S.user("Building the sales dashboard page. Need a revenue-by-day line chart for the last 12 months and a top-products bar chart. "
           "The reports page uses Chart.js through a wrapper, see src/components/Chart.vue.")
    S.asst("",
           [("Read", Read(f"{root}/src/components/Chart.vue"), numbered(chart_vue)),
            ("Read", Read(f"{root}/package.json"), numbered(pkg))])
    S.asst(r'''The wrapper destroys and rebuilds the whole chart on every deep change of `series`, and renders on a single canvas. For the dashboard that's going to hurt: 365 daily points × a few series is fine, but the reports page already passes ~8k points for the hourly view and takes ~1.5s to re-render on each filter change.

Options for the dashboard:

| | Chart.js (existing) | ECharts (`vue-echarts`) | ApexCharts |
|---|---|---|---|
| Large series | decimation plugin, canvas | canvas or SVG, `sampling: 'lttb'`, progressive rendering | SVG, slows past ~5k points |
| Interactions | basic tooltips | dataZoom, brush, linked charts | zoom, annotations |
| Bundle | ~70 kB gz | ~130 kB gz with tree-shaking | ~130 kB gz |
| Vue integration | our wrapper | `vue-echarts` component, reactive `option` | `vue3-apexcharts` |

For a revenue line with a date-range zoom, ECharts' `dataZoom` does out of the box what we'd otherwise build by hand.''')
    S.user("ECharts. Chart.js already chokes on the 365-day series on the reports page. ok let's do ECharts for the dashboard, via vue-echarts. "
           "Should we go Nuxt at some point for SSR, by the way?",
           mems=[("decision", "Use ECharts (via vue-echarts) for the sales dashboard charts instead of Chart.js.",
                  ["ECharts", "dashboard"])])
    S.trap("ApexCharts / keeping Chart.js — options compared, not chosen")
    S.trap("'Should we go Nuxt at some point for SSR?' — question")
    S.asst(r'''On Nuxt: for an admin app behind a login, SSR buys very little — no SEO, and the first paint is dominated by API calls that need the session anyway. It would add a Node server to deploy. I'd only revisit it if you build public pages.

Installing ECharts with only the pieces we need, so tree-shaking works:''',
           [("Bash", Bash("npm install echarts@^5.5 vue-echarts@^7 --save 2>&1 | tail -3", "Install echarts and vue-echarts"),
             "added 3 packages, and audited 214 packages in 4s\n\n43 packages are looking for funding\n  run `npm fund` for details\nfound 0 vulnerabilities"),
            ("Write", Write(f"{root}/src/components/dashboard/RevenueChart.vue", "<script setup lang=\"ts\">\nimport { computed } from \"vue\";\nimport VChart from \"vue-echarts\";\nimport { use } from \"echarts/core\";\nimport { CanvasRenderer } from \"echarts/renderers\";\nimport { LineChart } from \"echarts/charts\";\nimport { GridComponent, TooltipComponent, DataZoomComponent } from \"echarts/components\";\n\nuse([CanvasRenderer, LineChart, GridComponent, TooltipComponent, DataZoomComponent]);\n\nconst props = defineProps<{ days: string[]; revenueCents: number[] }>();\n\nconst option = computed(() => ({\n  tooltip: { trigger: \"axis\" },\n  xAxis: { type: \"category\", data: props.days },\n  yAxis: { type: \"value\", axisLabel: { formatter: (v: number) => `€${(v / 100).toLocaleString()}` } },\n  dataZoom: [{ type: \"inside\" }, { type: \"slider\" }],\n  series: [{ type: \"line\", data: props.revenueCents, sampling: \"lttb\", showSymbol: false }],\n}));\n</script>\n\n<template>\n  <VChart class=\"h-80\" :option=\"option\" autoresize />\n</template>\n"),
             created(f"{root}/src/components/dashboard/RevenueChart.vue"))])
    S.asst(r'''`RevenueChart.vue` is in place; `TopProductsChart.vue` will follow the same pattern with `BarChart`.

A naming question before I add more files. The Vue style guide says:

> Filenames of single-file components should either be always PascalCase or always kebab-case.

The repo currently has both (`Chart.vue`, `order-table.vue`, `CustomerBadge.vue`), and `Chart.vue` is a single word, which can clash with HTML elements and with the `Chart` class from chart.js in imports. What should new components follow?''')
    S.trap("quoted Vue style guide 'Filenames ... should either be always PascalCase or always kebab-case' — quoted documentation")
    S.user("Component files are PascalCase and multi-word, always. RevenueChart.vue good, Chart.vue bad. Rename Chart.vue to ReportsChart.vue and fix the imports.",
           mems=[("convention", "Vue component files are PascalCase and multi-word (e.g. RevenueChart.vue, never Chart.vue).",
                  ["PascalCase", "multi-word"])])
    S.asst("",
           [("Bash", Bash("git mv src/components/Chart.vue src/components/ReportsChart.vue && grep -rln \"components/Chart.vue\" src", "Rename and find imports"),
             "src/pages/ReportsPage.vue\nsrc/pages/InventoryPage.vue"),
            ("Edit", Edit(f"{root}/src/pages/ReportsPage.vue", "import Chart from \"@/components/Chart.vue\";", "import ReportsChart from \"@/components/ReportsChart.vue\";"),
             edited(f"{root}/src/pages/ReportsPage.vue", "import ReportsChart from \"@/components/ReportsChart.vue\";", 4)),
            ("Edit", Edit(f"{root}/src/pages/InventoryPage.vue", "import Chart from \"@/components/Chart.vue\";", "import ReportsChart from \"@/components/ReportsChart.vue\";"),
             edited(f"{root}/src/pages/InventoryPage.vue", "import ReportsChart from \"@/components/ReportsChart.vue\";", 6)),
            ("Read", Read(f"{root}/src/api/legacy.ts"),
             numbered("// TODO: migrate remaining callers to client.ts\nexport async function legacyGet<T>(path: string): Promise<T> {\n  const jwt = localStorage.getItem(\"jwt\");\n  const res = await fetch(`/api${path}`, {\n    headers: { Authorization: `Bearer ${jwt}` },\n  });\n  if (!res.ok) throw new Error(`${res.status} ${path}`);\n  return res.json();\n}"))])
    S.asst(r'''Renamed, both imports updated (and the `<Chart>` tags inside those pages).

For the data, the `/analytics/sales` endpoint the dashboard needs is currently only called from `src/api/legacy.ts`, which reads a JWT from `localStorage` and sends it as a bearer `Authorization` header. The quickest path is a `useSalesStats` composable on top of `legacyGet`, same as the inventory page does:

```ts
export function useSalesStats(range: Ref<DateRange>) {
  return useAsyncState(() => legacyGet<SalesStats>(`/analytics/sales?from=${range.value.from}&to=${range.value.to}`), null);
}
```''')
    S.user("No. Don't ever put API tokens in localStorage — that legacy file is the reason we failed the pentest last autumn. The session is an httpOnly cookie; "
           "use client.ts, it sends credentials: 'include'. And yes that legacy file needs to die eventually.",
           mems=[("antipattern", "Never keep API tokens in localStorage; auth is an httpOnly session cookie (use client.ts with credentials: 'include').",
                  ["localStorage", "tokens"])])
    S.trap("assistant's plan to build the composable on legacyGet (JWT read from localStorage) — rejected")
    S.asst("",
           [("Write", Write(f"{root}/src/composables/useSalesStats.ts", "import { ref, watch, type Ref } from \"vue\";\nimport { api } from \"@/api/client\";\nimport type { DateRange, SalesStats } from \"@/types\";\n\nexport function useSalesStats(range: Ref<DateRange>) {\n  const data = ref<SalesStats | null>(null);\n  const error = ref<Error | null>(null);\n  const loading = ref(false);\n\n  async function load() {\n    loading.value = true;\n    error.value = null;\n    try {\n      data.value = await api.get<SalesStats>(\"/analytics/sales\", { from: range.value.from, to: range.value.to });\n    } catch (e) {\n      error.value = e as Error;\n    } finally {\n      loading.value = false;\n    }\n  }\n\n  watch(range, load, { immediate: true, deep: true });\n  return { data, error, loading, reload: load };\n}\n"),
             created(f"{root}/src/composables/useSalesStats.ts")),
            ("Bash", Bash("npm run type-check && npm test 2>&1 | tail -6", "Type-check and run unit tests"),
             "\n> shopfront-admin@0.0.0 type-check\n> vue-tsc --noEmit\n\n\n RUN  v2.1.8 /home/mei/shopfront-admin\n\n Test Files  14 passed (14)\n      Tests  63 passed (63)\n   Start at  11:38:29\n   Duration  3.12s (transform 811ms, setup 0ms, collect 2.40s, environment 1.93s, prepare 1.12s)")])
    S.asst(r'''Type-check is clean and all 63 tests pass. The dashboard page (`src/pages/SalesDashboardPage.vue`) uses `useSalesStats` with the shared `client.ts`, so it rides on the session cookie.

One suggestion while the test setup is fresh in mind: add coverage thresholds to `vitest.config.ts` so coverage can't silently drop:

```ts
test: {
  coverage: {
    provider: "v8",
    thresholds: { lines: 80, functions: 80, branches: 70 },
  },
},
```

Current line coverage is around 74%, so we'd start a bit lower and ratchet up.''')
    S.user("coverage thresholds — not now. start the dev server so I can click around.")
    S.trap("assistant's suggestion to add vitest coverage thresholds — 'not now'")
    S.trap("'start the dev server so I can click around' — instruction for the moment")
    S.asst("",
           [("Bash", Bash("npm run dev -- --port 5173 > /tmp/vite.log 2>&1 & sleep 3; tail -5 /tmp/vite.log", "Start Vite dev server in background"),
             "\n  VITE v6.0.5  ready in 612 ms\n\n  ➜  Local:   http://localhost:5173/\n  ➜  Network: use --host to expose")])
    S.asst("The dev server is running at http://localhost:5173/ and the dashboard is at `/sales`. Drag the slider under the revenue chart to zoom into a date range; the top-products chart follows the same range.")
    return S


# =============================================================================
# session-11  (de) Spring Boot logistics: Flyway vs Liquibase, SAP batch, records
# =============================================================================
def s11():
    root = "/home/jens/tourplaner"
    S = Session(11, "de", root, "feature/bestandsabgleich", "2026-05-05T08:12:37.880", version="2.0.39")
    readme = r'''# Tourplaner

Backend für die Tourenplanung der Speditionsstandorte Kassel und Erfurt.

## Technik
- Java 21, Spring Boot 3.3, PostgreSQL 16
- Datenbankmigrationen werden mit Liquibase verwaltet (haben wir 2021 so beschlossen),
  Changelogs unter `src/main/resources/db/changelog/`.
- Lombok für Entities und DTOs

## Lokal starten
    docker compose up -d postgres
    ./mvnw spring-boot:run -Dspring-boot.run.profiles=local'''
    S.user("Wir müssen den Bestandsabgleich mit dem Lager bauen: Bestände aus SAP holen und in unsere Tabelle `lagerbestand` schreiben. "
           "Schau dir erst mal an, wie das Projekt aufgebaut ist, bevor du loslegst.")
    S.asst("Ich schaue mir README, die Migrationsordner und die pom.xml an.",
           [("Read", Read(f"{root}/README.md"), numbered(readme)),
            ("Bash", Bash("ls src/main/resources/db/changelog src/main/resources/db/migration && grep -n -E 'liquibase|flyway|lombok|mapstruct' pom.xml",
                          "Migrationsordner und relevante Abhängigkeiten prüfen"),
             "src/main/resources/db/changelog:\ndb.changelog-master.yaml\n001-init.xml\n002-touren.xml\n003-fahrzeuge.xml\n\nsrc/main/resources/db/migration:\nV1__init.sql\nV2__touren.sql\nV3__fahrzeuge.sql\nV4__fahrer_qualifikationen.sql\nV5__touren_index.sql\n"
             "48:      <artifactId>liquibase-core</artifactId>\n53:      <artifactId>flyway-core</artifactId>\n57:      <artifactId>flyway-database-postgresql</artifactId>\n71:      <artifactId>lombok</artifactId>")])
    S.trap("README-Ausgabe 'Datenbankmigrationen werden mit Liquibase verwaltet (haben wir 2021 so beschlossen)' — stale doc inside tool output")
    S.asst(r'''Auffällig: Das Projekt hat **zwei** Migrationswerkzeuge gleichzeitig.

- `db/changelog/` enthält drei Liquibase-Changesets (Stand `003-fahrzeuge`).
- `db/migration/` enthält fünf Flyway-Skripte (`V1` bis `V5`), also zwei mehr als Liquibase.
- In der `pom.xml` sind `liquibase-core` **und** `flyway-core` eingebunden.

Spring Boot führt beim Start beide aus, wenn beide auf dem Classpath liegen: erst Flyway, dann Liquibase. Dass das bisher nicht knallt, liegt vermutlich daran, dass die Liquibase-Changesets `preConditions onFail="MARK_RAN"` haben. Die README sagt Liquibase, der neuere Stand liegt aber offensichtlich bei Flyway.

Für die neue Tabelle brauche ich eine Migration. Bevor ich sie anlege: Welches Werkzeug soll es sein? Zum Vergleich, dieselbe Tabelle in beiden Varianten:

```sql
-- Flyway: src/main/resources/db/migration/V6__lagerbestand.sql
CREATE TABLE lagerbestand (
    artikel_nr    varchar(18) NOT NULL,
    lagerort      varchar(10) NOT NULL,
    menge         numeric(12,3) NOT NULL,
    einheit       varchar(3) NOT NULL,
    stand_sap     timestamptz NOT NULL,
    aktualisiert  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (artikel_nr, lagerort)
);
```

```xml
<!-- Liquibase: 004-lagerbestand.xml -->
<changeSet id="004-lagerbestand" author="tourplaner">
  <createTable tableName="lagerbestand"> ... </createTable>
</changeSet>
```''')
    S.user("Ja, das ist ein Überbleibsel von der Umstellung letztes Jahr, die keiner zu Ende gebracht hat. Dann machen wir's mit Flyway, Liquibase fliegt raus. "
           "Die Changelogs sind eh alle schon als SQL in db/migration nachgezogen.",
           mems=[("decision", "Datenbankmigrationen nur noch mit Flyway; Liquibase (Abhängigkeit und Changelogs) fliegt raus.",
                  ["Flyway", "Liquibase"])])
    S.asst("Dann entferne ich Liquibase aus der pom.xml und lösche die alten Changelogs; die README passe ich gleich mit an.",
           [("Edit", Edit(f"{root}/pom.xml", "    <dependency>\n      <groupId>org.liquibase</groupId>\n      <artifactId>liquibase-core</artifactId>\n    </dependency>\n", ""),
             edited(f"{root}/pom.xml", "    <dependency>\n      <groupId>org.flywaydb</groupId>\n      <artifactId>flyway-core</artifactId>\n    </dependency>", 47)),
            ("Bash", Bash("git rm -rq src/main/resources/db/changelog && sed -i 's/^- Datenbankmigrationen werden mit Liquibase.*/- Datenbankmigrationen: Flyway, Skripte unter `src\\/main\\/resources\\/db\\/migration\\/`./' README.md && sed -i '/Changelogs unter/d' README.md && git status --short",
                          "Liquibase-Changelogs löschen, README anpassen"),
             "M  README.md\nD  src/main/resources/db/changelog/001-init.xml\nD  src/main/resources/db/changelog/002-touren.xml\nD  src/main/resources/db/changelog/003-fahrzeuge.xml\nD  src/main/resources/db/changelog/db.changelog-master.yaml\n M pom.xml")])
    S.asst(r'''Liquibase ist raus. Auf bestehenden Datenbanken bleibt die Tabelle `databasechangelog` liegen; die können wir später mit einer eigenen Flyway-Migration droppen.

Jetzt der Abgleich selbst. Mein Vorschlag wäre ein `@Scheduled`-Job, der **jede Minute** den SAP-Endpunkt abfragt und die Tabelle per `INSERT ... ON CONFLICT DO UPDATE` aktualisiert:

```java
@Scheduled(fixedDelay = 60_000)
public void abgleichen() {
    var bestaende = sapClient.holeBestaende();
    repository.upsertAll(bestaende);
}
```

So wären die Disponenten höchstens eine Minute hinter dem Lager.''')
    S.user("Jede Minute bringt nichts. SAP EWM liefert die Bestände nur alle 15 Minuten als Batch-Export, dazwischen ändert sich auf der Schnittstelle nichts. "
           "Wenn wir Echtzeitdaten hätten, könnte man über Events nachdenken, haben wir aber nicht.",
           mems=[("fact", "SAP EWM liefert die Lagerbestände nur alle 15 Minuten als Batch-Export (keine Echtzeitdaten).",
                  ["SAP", "15 Minuten"])])
    S.trap("Vorschlag des Assistenten, jede Minute zu pollen — abgelehnt")
    S.trap("'Wenn wir Echtzeitdaten hätten, könnte man über Events nachdenken' — hypothetical")
    dto = "package de.spedition.tourplaner.lager;\n\nimport lombok.Data;\nimport java.math.BigDecimal;\nimport java.time.OffsetDateTime;\n\n@Data\npublic class BestandDto {\n    private String artikelNr;\n    private String lagerort;\n    private BigDecimal menge;\n    private String einheit;\n    private OffsetDateTime standSap;\n}\n"
    S.asst("Verstanden. Dann läuft der Job alle 15 Minuten, mit ein paar Minuten Versatz, damit der Export sicher fertig ist.",
           [("Write", Write(f"{root}/src/main/java/de/spedition/tourplaner/lager/LagerbestandSyncJob.java", "package de.spedition.tourplaner.lager;\n\n@Component\n@RequiredArgsConstructor\npublic class LagerbestandSyncJob {\n\n    private final SapEwmClient sapClient;\n    private final LagerbestandRepository repository;\n\n    // SAP-Export läuft zu :00/:15/:30/:45, wir holen 3 Minuten später ab\n    @Scheduled(cron = \"0 3/15 * * * *\", zone = \"Europe/Berlin\")\n    public void abgleichen() {\n        List<BestandDto> bestaende = sapClient.holeBestaende();\n        repository.upsertAll(bestaende);\n    }\n}\n"),
             created(f"{root}/src/main/java/de/spedition/tourplaner/lager/LagerbestandSyncJob.java")),
            ("Write", Write(f"{root}/src/main/java/de/spedition/tourplaner/lager/BestandDto.java", dto),
             created(f"{root}/src/main/java/de/spedition/tourplaner/lager/BestandDto.java")),
            ("Write", Write(f"{root}/src/main/resources/db/migration/V6__lagerbestand.sql", "CREATE TABLE lagerbestand (\n    artikel_nr    varchar(18) NOT NULL,\n    lagerort      varchar(10) NOT NULL,\n    menge         numeric(12,3) NOT NULL,\n    einheit       varchar(3) NOT NULL,\n    stand_sap     timestamptz NOT NULL,\n    aktualisiert  timestamptz NOT NULL DEFAULT now(),\n    PRIMARY KEY (artikel_nr, lagerort)\n);\n"),
             created(f"{root}/src/main/resources/db/migration/V6__lagerbestand.sql"))])
    S.asst(r'''Angelegt: Job, DTO und die Flyway-Migration `V6__lagerbestand.sql`. Der Cron `0 3/15 * * * *` läuft um :03, :18, :33 und :48.

Das `BestandDto` habe ich wie die übrigen DTOs im Projekt mit Lombok `@Data` gebaut. Für das Mapping DTO → Entity würde ich **MapStruct** vorschlagen, dann schreiben wir die Zuordnung nicht von Hand:

```java
@Mapper(componentModel = "spring")
public interface LagerbestandMapper {
    Lagerbestand toEntity(BestandDto dto);
}
```''')
    S.user("MapStruct lass mal, das sind fünf Felder. Und DTOs sind bei uns Java-Records, kein Lombok-@Data — Lombok wollen wir langfristig ganz loswerden, "
           "die alten DTOs stellen wir nach und nach um. Sollten wir eigentlich gleich auf Kotlin umsteigen? Nee, vergiss es, anderes Thema.",
           mems=[("convention", "DTOs sind Java-Records, keine Lombok-@Data-Klassen (Lombok soll langfristig ganz raus).",
                  ["Records", "Lombok"])])
    S.trap("MapStruct-Vorschlag des Assistenten — abgelehnt ('lass mal')")
    S.trap("'Sollten wir eigentlich gleich auf Kotlin umsteigen? Nee, vergiss es' — question, dropped")
    S.asst("",
           [("Write", Write(f"{root}/src/main/java/de/spedition/tourplaner/lager/BestandDto.java", "package de.spedition.tourplaner.lager;\n\nimport java.math.BigDecimal;\nimport java.time.OffsetDateTime;\n\npublic record BestandDto(\n        String artikelNr,\n        String lagerort,\n        BigDecimal menge,\n        String einheit,\n        OffsetDateTime standSap) {\n}\n"),
             "The file " + f"{root}/src/main/java/de/spedition/tourplaner/lager/BestandDto.java" + " has been updated.")])
    S.asst("Umgestellt: `BestandDto` ist jetzt ein Record, das Mapping mache ich als statische Methode `Lagerbestand.aus(BestandDto)` im Entity. Soll ich die Tests laufen lassen?")
    S.user("Ja, lass jetzt mal die Tests laufen.")
    S.trap("'lass jetzt mal die Tests laufen' — instruction for the moment")
    S.asst("",
           [("Bash", Bash("./mvnw -q test 2>&1 | tail -15", "Tests ausführen"),
             "2026-05-05T10:28:09.117+02:00  INFO 48213 --- [           main] o.f.core.internal.command.DbMigrate      : Migrating schema \"public\" to version \"6 - lagerbestand\"\n2026-05-05T10:28:09.164+02:00  INFO 48213 --- [           main] o.f.core.internal.command.DbMigrate      : Successfully applied 6 migrations to schema \"public\", now at version v6 (execution time 00:00.212s)\n[INFO] Tests run: 47, Failures: 0, Errors: 0, Skipped: 2, Time elapsed: 18.44 s\n[INFO] \n[INFO] Results:\n[INFO] \n[INFO] Tests run: 47, Failures: 0, Errors: 0, Skipped: 2\n[INFO] \n[INFO] BUILD SUCCESS")])
    S.asst(r'''Alles grün: 47 Tests, 0 Fehler, 2 übersprungen (die SAP-Integrationstests, die nur mit VPN laufen). Im Log sieht man, dass Flyway jetzt alleine migriert und bei `v6 - lagerbestand` steht.

Zusammenfassung für den Branch `feature/bestandsabgleich`:
- Liquibase entfernt (Abhängigkeit, Changelogs, README).
- `V6__lagerbestand.sql` mit Primärschlüssel `(artikel_nr, lagerort)`.
- `LagerbestandSyncJob`: alle 15 Minuten um :03/:18/:33/:48 (Europe/Berlin), Upsert per `ON CONFLICT`.
- `BestandDto` als Record, Mapping ohne MapStruct.

Offen: ein Testcontainers-Test für den Upsert und das Droppen von `databasechangelog` auf den bestehenden Umgebungen.''')
    return S


# =============================================================================
# session-12  (es) Express + Prisma bakery shop: payments, db push, zod
# =============================================================================
def s12():
    root = "/home/valeria/pan-de-casa-api"
    S = Session(12, "es", root, "feat/pagos", "2026-05-11T17:03:20.245", version="2.0.39")
    schema = r'''generator client {
  provider = "prisma-client-js"
}

datasource db {
  provider = "postgresql"
  url      = env("DATABASE_URL")
}

model Order {
  id          String      @id @default(cuid())
  branchId    String
  customerId  String
  status      OrderStatus @default(PENDING)
  totalCents  Int
  pickupAt    DateTime
  items       OrderItem[]
  createdAt   DateTime    @default(now())
}

enum OrderStatus {
  PENDING
  PAID
  READY
  PICKED_UP
  CANCELLED
}'''
    routes = r'''import { Router } from "express";
import { prisma } from "../db";

export const orders = Router();

orders.post("/", async (req, res) => {
  const { branchId, customerId, items, pickupAt } = req.body;
  if (!branchId || !customerId || !Array.isArray(items) || items.length === 0) {
    return res.status(400).json({ error: "datos incompletos" });
  }
  if (typeof pickupAt !== "string" || isNaN(Date.parse(pickupAt))) {
    return res.status(400).json({ error: "pickupAt inválido" });
  }
  const totalCents = await priceItems(items);
  const order = await prisma.order.create({
    data: { branchId, customerId, totalCents, pickupAt: new Date(pickupAt), items: { create: items } },
  });
  res.status(201).json(order);
});'''
    S.user("Hay que integrar los pagos de los pedidos. Mira cómo está el modelo Order en prisma/schema.prisma y el router de pedidos, src/routes/orders.ts.")
    S.asst("Leo los dos archivos.",
           [("Read", Read(f"{root}/prisma/schema.prisma"), numbered(schema)),
            ("Read", Read(f"{root}/src/routes/orders.ts"), numbered(routes))])
    S.asst(r'''Resumen de lo que hay:

- `Order` ya tiene `status` con `PENDING → PAID → READY → PICKED_UP`, así que el flujo de pago encaja: el pedido nace `PENDING` y el webhook del proveedor lo pasa a `PAID`.
- No hay ningún modelo de pago; propongo uno separado para guardar los intentos (un pedido puede tener un pago rechazado y luego uno aprobado):

```prisma
model Payment {
  id          String        @id @default(cuid())
  orderId     String
  order       Order         @relation(fields: [orderId], references: [id])
  provider    String
  providerRef String        @unique
  status      PaymentStatus
  amountCents Int
  raw         Json
  createdAt   DateTime      @default(now())
}
```

- La validación del body en `orders.post` es manual (`if (!branchId || ...)`), y no revisa que cada item tenga `productId` y `qty` positivos.

Antes de seguir: ¿qué proveedor de pagos usamos? Con **Stripe** tendríamos Checkout y webhooks muy bien documentados; con **Mercado Pago** tendríamos Checkout Pro y los medios de pago locales.''')
    S.user("Stripe ni lo pienses, en México la mitad de los clientes paga en OXXO o con tarjetas de débito locales. "
           "Ojo: en producción los pagos van por Mercado Pago con la cuenta de México, todo en MXN.",
           mems=[("fact", "En producción los pagos van por Mercado Pago con la cuenta de México; todo se cobra en MXN.",
                  ["Mercado Pago", "MXN"])])
    S.trap("Stripe como proveedor — opción descartada")
    S.asst("Perfecto. Agrego el modelo `Payment` y genero la migración en local.",
           [("Edit", Edit(f"{root}/prisma/schema.prisma", "  items       OrderItem[]\n  createdAt   DateTime    @default(now())\n}",
                          "  items       OrderItem[]\n  payments    Payment[]\n  createdAt   DateTime    @default(now())\n}\n\nmodel Payment {\n  id          String        @id @default(cuid())\n  orderId     String\n  order       Order         @relation(fields: [orderId], references: [id])\n  provider    String        @default(\"mercadopago\")\n  providerRef String        @unique\n  status      PaymentStatus\n  amountCents Int\n  currency    String        @default(\"MXN\")\n  raw         Json\n  createdAt   DateTime      @default(now())\n}\n\nenum PaymentStatus {\n  PENDING\n  APPROVED\n  REJECTED\n  REFUNDED\n}"),
             edited(f"{root}/prisma/schema.prisma", "  items       OrderItem[]\n  payments    Payment[]\n  createdAt   DateTime    @default(now())\n}\n\nmodel Payment {", 16)),
            ("Bash", Bash("npx prisma migrate dev --name add_payments 2>&1 | tail -8", "Crear migración local"),
             "Applying migration `20260511170918_add_payments`\n\nThe following migration(s) have been created and applied from new schema changes:\n\nmigrations/\n  └─ 20260511170918_add_payments/\n    └─ migration.sql\n\nYour database is now in sync with your schema.\n\n✔ Generated Prisma Client (v5.22.0) to ./node_modules/@prisma/client in 118ms")])
    S.asst(r'''La migración `20260511170918_add_payments` quedó creada y aplicada en local.

Para el despliegue, la documentación de Prisma dice:

> `db push` is intended for prototyping. We do not recommend using `db push` in production or with a team; use `prisma migrate deploy` with committed migration files instead.

Dicho eso, como la tabla es nueva y no toca datos existentes, lo más rápido para probar hoy mismo sería correr `npx prisma db push` directo contra la base de Railway con la `DATABASE_URL` de prod, y dejar el pipeline para después.''')
    S.trap("cita de la documentación de Prisma ('We do not recommend using db push in production') — quoted documentation")
    S.user("No. Nunca uses prisma db push contra producción, una vez nos borró una columna con datos. En producción solo `prisma migrate deploy` desde el pipeline. "
           "Por cierto, ¿y si usamos Drizzle en vez de Prisma? Lo vi en Twitter y todos hablan maravillas.",
           mems=[("antipattern", "Nunca usar `prisma db push` contra producción (ya borró una columna); en producción solo `prisma migrate deploy` desde el pipeline.",
                  ["db push", "producción"])])
    S.trap("propuesta del asistente de correr db push contra producción — rechazada")
    S.trap("'¿y si usamos Drizzle en vez de Prisma?' — hypothetical question")
    S.asst(r'''Entendido, nada de `db push` en producción; la migración se aplica con `migrate deploy` en el job de despliegue, que ya existe en `.github/workflows/deploy.yml`.

Sobre Drizzle: es más ligero (sin motor binario, SQL más explícito, tipos inferidos del esquema en TypeScript) y sus consultas se parecen más al SQL real. Pero cambiar ahora significaría reescribir las ~40 consultas y el esquema, y migrar el historial de migraciones. Para este proyecto no veo un problema concreto que Drizzle resuelva.

Ahora el webhook. Mercado Pago manda una notificación con el `id` del pago y hay que consultarlo a su API para conocer el estado real:''',
           [("Write", Write(f"{root}/src/routes/webhooks/mercadopago.ts", "import { Router } from \"express\";\nimport { MercadoPagoConfig, Payment as MpPayment } from \"mercadopago\";\nimport { prisma } from \"../../db\";\nimport { verifySignature } from \"./signature\";\n\nconst mp = new MercadoPagoConfig({ accessToken: process.env.MP_ACCESS_TOKEN! });\nexport const mercadopago = Router();\n\nmercadopago.post(\"/\", async (req, res) => {\n  if (!verifySignature(req)) return res.sendStatus(401);\n  if (req.body?.type !== \"payment\") return res.sendStatus(200);\n\n  const pago = await new MpPayment(mp).get({ id: req.body.data.id });\n  const status = pago.status === \"approved\" ? \"APPROVED\" : pago.status === \"rejected\" ? \"REJECTED\" : \"PENDING\";\n\n  await prisma.$transaction(async (tx) => {\n    await tx.payment.upsert({\n      where: { providerRef: String(pago.id) },\n      create: { orderId: pago.external_reference!, providerRef: String(pago.id), status, amountCents: Math.round(pago.transaction_amount! * 100), raw: pago as any },\n      update: { status, raw: pago as any },\n    });\n    if (status === \"APPROVED\") {\n      await tx.order.update({ where: { id: pago.external_reference! }, data: { status: \"PAID\" } });\n    }\n  });\n  res.sendStatus(200);\n});\n"),
             created(f"{root}/src/routes/webhooks/mercadopago.ts"))])
    S.asst(r'''El webhook verifica la firma `x-signature`, consulta el pago y hace upsert por `providerRef`, así que si Mercado Pago reenvía la misma notificación no se duplica el pago.

Me quedan dos cosas:

1. **Validación de bodies.** Tanto `orders.post` como el webhook validan a mano. Podría escribir un helper `validarPedido(body)` con los mismos `if` que ya hay, extendido a los items.
2. **Tabla de idempotencia** para eventos de webhook (`WebhookEvent` con el `x-request-id`), para registrar cada notificación recibida aunque el pago ya exista.''')
    S.user("Validaciones a mano no. Prefiero zod para validar los bodies, en todos los endpoints nuevos, con el esquema junto a la ruta. "
           "La tabla de idempotencia después la vemos. Corre las pruebas cuando lo tengas.",
           mems=[("preference", "Prefiere zod para validar los bodies de las peticiones (nada de validaciones a mano), con el esquema junto a la ruta.",
                  ["zod", "validar"])])
    S.trap("tabla de idempotencia para webhooks — 'después la vemos', not adopted (and the assistant's hand-written validation helper, rejected)")
    S.trap("'Corre las pruebas cuando lo tengas' — instruction for the moment")
    S.asst("",
           [("Bash", Bash("npm install zod@^3.23 --save 2>&1 | tail -1", "Instalar zod"), "added 1 package, and audited 389 packages in 2s"),
            ("Edit", Edit(f"{root}/src/routes/orders.ts",
                          "orders.post(\"/\", async (req, res) => {\n  const { branchId, customerId, items, pickupAt } = req.body;\n  if (!branchId || !customerId || !Array.isArray(items) || items.length === 0) {\n    return res.status(400).json({ error: \"datos incompletos\" });\n  }\n  if (typeof pickupAt !== \"string\" || isNaN(Date.parse(pickupAt))) {\n    return res.status(400).json({ error: \"pickupAt inválido\" });\n  }",
                          "const NuevoPedido = z.object({\n  branchId: z.string().cuid(),\n  customerId: z.string().cuid(),\n  pickupAt: z.coerce.date(),\n  items: z.array(z.object({ productId: z.string().cuid(), qty: z.number().int().positive() })).min(1),\n});\n\norders.post(\"/\", async (req, res) => {\n  const parsed = NuevoPedido.safeParse(req.body);\n  if (!parsed.success) return res.status(400).json({ error: parsed.error.flatten() });\n  const { branchId, customerId, items, pickupAt } = parsed.data;"),
             edited(f"{root}/src/routes/orders.ts", "const NuevoPedido = z.object({\n  branchId: z.string().cuid(),\n  customerId: z.string().cuid(),\n  pickupAt: z.coerce.date(),\n  items: z.array(z.object({ productId: z.string().cuid(), qty: z.number().int().positive() })).min(1),\n});", 6)),
            ("Bash", Bash("npm test 2>&1 | tail -8", "Correr las pruebas"),
             " ✓ src/routes/orders.test.ts (9 tests) 412ms\n ✓ src/routes/webhooks/mercadopago.test.ts (5 tests) 233ms\n ✓ src/lib/pricing.test.ts (12 tests) 18ms\n\n Test Files  3 passed (3)\n      Tests  26 passed (26)\n   Start at  11:17:19\n   Duration  1.94s")])
    S.asst(r'''Las 26 pruebas pasan, incluidas 5 nuevas del webhook (firma inválida → 401, pago aprobado → pedido `PAID`, notificación repetida → un solo `Payment`).

Cambios en `feat/pagos`:
- `Payment` + `PaymentStatus` en el esquema, migración `add_payments` (se aplica en producción con `prisma migrate deploy` desde el pipeline).
- Webhook de Mercado Pago en `/webhooks/mercadopago`, con verificación de firma.
- `orders.post` valida el body con un esquema zod `NuevoPedido` junto a la ruta; el esquema del webhook queda en el mismo archivo que su ruta.

Falta configurar `MP_ACCESS_TOKEN` y `MP_WEBHOOK_SECRET` en Railway para producción.''')
    return S


# =============================================================================
# session-13  (pt) Airflow DAG for PTAX exchange rate: TaskFlow, Variable.get, schedule
# =============================================================================
def s13():
    root = "/home/thiago/dados-airflow"
    S = Session(13, "pt", root, "feat/dag-ptax", "2026-05-18T13:27:51.663", version="2.0.40")
    cdi = r'''from datetime import datetime

import requests
from airflow import DAG
from airflow.models import Variable
from airflow.operators.python import PythonOperator
from airflow.providers.postgres.hooks.postgres import PostgresHook

OLINDA_URL = Variable.get("olinda_base_url")
ALERTA_EMAIL = Variable.get("alerta_email_dados")


def extrair_cdi(ds, **_):
    r = requests.get(f"{OLINDA_URL}/SGS/bcdata.sgs.12/dados", params={"formato": "json", "dataInicial": ds, "dataFinal": ds}, timeout=30)
    r.raise_for_status()
    return r.json()


def gravar_cdi(ti, **_):
    dados = ti.xcom_pull(task_ids="extrair_cdi")
    hook = PostgresHook(postgres_conn_id="dw")
    hook.insert_rows("mercado.cdi_diario", [(d["data"], d["valor"]) for d in dados], replace=True, replace_index="data")


with DAG(
    dag_id="cdi_diario",
    start_date=datetime(2024, 1, 1),
    schedule="0 9 * * 1-5",
    catchup=False,
    default_args={"email": [ALERTA_EMAIL], "retries": 2},
) as dag:
    extrair = PythonOperator(task_id="extrair_cdi", python_callable=extrair_cdi)
    gravar = PythonOperator(task_id="gravar_cdi", python_callable=gravar_cdi)
    extrair >> gravar'''
    S.user("Preciso de um DAG novo que puxe a PTAX do dia da API Olinda do Banco Central e grave na tabela cambio.ptax_diaria no Postgres do DW. "
           "Dá uma olhada no DAG do CDI, que é parecido: dags/cdi_diario.py")
    S.asst("Vou ler o DAG do CDI.",
           [("Read", Read(f"{root}/dags/cdi_diario.py"), numbered(cdi))])
    S.asst(r'''O DAG do CDI usa o estilo clássico: duas funções soltas, `PythonOperator` para cada uma e a passagem de dados via `ti.xcom_pull` com o `task_id` escrito à mão. Para a PTAX dá para fazer igual, ou usar a **TaskFlow API** (Airflow 2.x), que fica mais curta e passa o XCom implicitamente:

```python
@dag(schedule="...", start_date=datetime(2024, 1, 1), catchup=False)
def ptax_diaria():
    @task
    def extrair(ds=None) -> list[dict]:
        ...

    @task
    def gravar(cotacoes: list[dict]) -> None:
        ...

    gravar(extrair())

ptax_diaria()
```

Uma terceira opção seria rodar cada passo num `KubernetesPodOperator` com uma imagem própria, isolando as dependências — mas para uma chamada HTTP e um insert é exagero.

Qual estilo você prefere para os DAGs novos?''')
    S.user("será que não vale a pena migrar tudo pro Dagster de uma vez, já que vamos mexer?")
    S.trap("'será que não vale a pena migrar tudo pro Dagster de uma vez?' — question; dropped ('não agora')")
    S.asst(r'''Eu não misturaria as duas coisas. Hoje são 23 DAGs em produção, com alertas por e-mail, conexões e variáveis configuradas no Airflow, e o time de BI depende dos horários deles. Migrar para Dagster é um projeto de semanas (reescrever os DAGs como assets, portar conexões, operar outro serviço) e não muda nada para a PTAX. Se vocês quiserem avaliar, dá para fazer depois com um ou dois pipelines piloto.''')
    S.user("é, não agora. Beleza: DAGs novos a gente escreve com a TaskFlow API, com @task. Os antigos ficam como estão.",
           mems=[("decision", "DAGs novos são escritos com a TaskFlow API (@task); os DAGs antigos ficam como estão.",
                  ["TaskFlow", "DAGs"])])
    S.trap("KubernetesPodOperator por passo — option mentioned and not chosen")
    ptax = r'''from datetime import datetime

import requests
from airflow.decorators import dag, task
from airflow.models import Variable
from airflow.providers.postgres.hooks.postgres import PostgresHook

OLINDA_URL = Variable.get("olinda_base_url")


@dag(
    dag_id="ptax_diaria",
    schedule="0 9 * * 1-5",
    start_date=datetime(2024, 1, 1),
    catchup=False,
    default_args={"retries": 3},
    tags=["cambio"],
)
def ptax_diaria():
    @task
    def extrair(ds=None) -> list[dict]:
        data = datetime.strptime(ds, "%Y-%m-%d").strftime("%m-%d-%Y")
        r = requests.get(
            f"{OLINDA_URL}/PTAX/versao/v1/odata/CotacaoDolarDia(dataCotacao=@dataCotacao)",
            params={"@dataCotacao": f"'{data}'", "$format": "json"},
            timeout=30,
        )
        r.raise_for_status()
        return r.json()["value"]

    @task
    def gravar(cotacoes: list[dict], ds=None) -> None:
        if not cotacoes:
            raise ValueError(f"PTAX de {ds} ainda não publicada")
        c = cotacoes[-1]
        PostgresHook(postgres_conn_id="dw").insert_rows(
            "cambio.ptax_diaria",
            [(ds, c["cotacaoCompra"], c["cotacaoVenda"], c["dataHoraCotacao"])],
            replace=True,
            replace_index="data",
        )

    gravar(extrair())


ptax_diaria()'''
    S.asst("Escrevendo o DAG da PTAX com TaskFlow, seguindo o CDI no resto (conexão `dw`, variável da URL, dias úteis).",
           [("Write", Write(f"{root}/dags/ptax_diaria.py", ptax), created(f"{root}/dags/ptax_diaria.py"))])
    S.asst(r'''Criado `dags/ptax_diaria.py`:

- `extrair` chama o endpoint `CotacaoDolarDia` da API Olinda para a data lógica (`ds`, convertida para `MM-DD-AAAA`, formato que a API exige).
- `gravar` pega a última cotação do dia (a API devolve uma por boletim) e faz upsert em `cambio.ptax_diaria` pela coluna `data`.
- Se a lista vier vazia, a task falha com `PTAX ... ainda não publicada` e o Airflow tenta de novo (3 retries).
- Horário igual ao do CDI: `0 9 * * 1-5`.''')
    S.user("Duas coisas. Primeiro: nunca chamar Variable.get no topo do arquivo do DAG. O scheduler faz parse de cada arquivo a cada 30 segundos e cada parse bate no banco "
           "de metadados — já derrubamos o scheduler assim uma vez. Coloca dentro da task. Segundo: 9h não serve, o Banco Central publica a PTAX do dia por volta das 13h. "
           "Põe pra rodar 13h30, horário de Brasília.",
           mems=[("antipattern", "Nunca chamar Variable.get no topo do arquivo do DAG (cada parse do scheduler bate no banco de metadados); ler dentro da task.",
                  ["Variable.get", "topo"]),
                 ("fact", "O Banco Central publica a PTAX do dia por volta das 13h (horário de Brasília); o DAG roda às 13h30.",
                  ["PTAX", "13h"])])
    S.trap("assistant's schedule copied from CDI (09:00) — rejected")
    S.asst("",
           [("Edit", Edit(f"{root}/dags/ptax_diaria.py", "OLINDA_URL = Variable.get(\"olinda_base_url\")\n\n\n@dag(\n    dag_id=\"ptax_diaria\",\n    schedule=\"0 9 * * 1-5\",\n    start_date=datetime(2024, 1, 1),",
                          "@dag(\n    dag_id=\"ptax_diaria\",\n    schedule=\"30 13 * * 1-5\",\n    start_date=pendulum.datetime(2024, 1, 1, tz=\"America/Sao_Paulo\"),"),
             edited(f"{root}/dags/ptax_diaria.py", "@dag(\n    dag_id=\"ptax_diaria\",\n    schedule=\"30 13 * * 1-5\",\n    start_date=pendulum.datetime(2024, 1, 1, tz=\"America/Sao_Paulo\"),\n    catchup=False,", 9)),
            ("Edit", Edit(f"{root}/dags/ptax_diaria.py", "    def extrair(ds=None) -> list[dict]:\n        data = ", "    def extrair(ds=None) -> list[dict]:\n        olinda_url = Variable.get(\"olinda_base_url\")\n        data = "),
             edited(f"{root}/dags/ptax_diaria.py", "    @task\n    def extrair(ds=None) -> list[dict]:\n        olinda_url = Variable.get(\"olinda_base_url\")\n        data = datetime.strptime(ds, \"%Y-%m-%d\").strftime(\"%m-%d-%Y\")", 19)),
            ("Bash", Bash("airflow dags test ptax_diaria 2026-05-15 2>&1 | grep -E 'INFO - (Done|Marking|Returned)|ERROR' | head -8", "Testar o DAG localmente para 15/05"),
             "[2026-05-18T10:40:29.114-0300] {python.py:240} INFO - Done. Returned value was: [{'cotacaoCompra': 5.6712, 'cotacaoVenda': 5.6718, 'dataHoraCotacao': '2026-05-15 13:04:29.871'}]\n[2026-05-18T10:40:29.130-0300] {taskinstance.py:1205} INFO - Marking task as SUCCESS. dag_id=ptax_diaria, task_id=extrair, run_id=manual__2026-05-15T00:00:00+00:00\n[2026-05-18T10:40:29.402-0300] {python.py:240} INFO - Done. Returned value was: None\n[2026-05-18T10:40:29.417-0300] {taskinstance.py:1205} INFO - Marking task as SUCCESS. dag_id=ptax_diaria, task_id=gravar, run_id=manual__2026-05-15T00:00:00+00:00")])
    S.asst(r'''Corrigido e testado:

- `Variable.get` agora está dentro de `extrair`, então só é lida quando a task roda.
- Schedule `30 13 * * 1-5` com `start_date` em `America/Sao_Paulo`, ou seja 13h30 de Brasília em dias úteis.
- `airflow dags test` para 15/05 gravou compra 5,6712 / venda 5,6718 (boletim das 13:04).

O `cdi_diario.py` tem o mesmo problema de `Variable.get` no topo (duas chamadas). Como você disse que os antigos ficam como estão, não mexi.

Uma sugestão: o DAG `relatorio_exposicao` hoje roda às 14h "torcendo" para a PTAX já estar gravada. Com **Datasets** do Airflow (`outlets=[Dataset("postgres://dw/cambio.ptax_diaria")]` na task `gravar` e `schedule=[Dataset(...)]` no relatório), ele passaria a rodar logo que a PTAX for gravada.''')
    S.user("Datasets eu quero ver com calma outro dia. Agora limpa as tasks falhadas de ontem do cdi_diario pra ele rodar de novo.")
    S.trap("assistant's suggestion to trigger relatorio_exposicao with Airflow Datasets — postponed, not adopted")
    S.trap("'limpa as tasks falhadas de ontem do cdi_diario' — instruction for the moment")
    S.asst("",
           [("Bash", Bash("airflow tasks clear cdi_diario --only-failed --start-date 2026-05-17 --end-date 2026-05-17 --yes", "Limpar tasks falhadas de ontem no cdi_diario"),
             "[2026-05-18T10:43:57.877-0300] {dag.py:2187} INFO - Clearing 1 task instance(s)\n<TaskInstance: cdi_diario.extrair_cdi scheduled__2026-05-17T12:00:00+00:00 [failed]>")])
    S.asst("Limpei a única task falhada de ontem (`extrair_cdi`); o scheduler vai reexecutá-la em seguida, e `gravar_cdi` roda depois dela. Se falhar de novo, o log deve mostrar se foi timeout da API Olinda (o que aconteceu nos dois últimos feriados).")
    return S


# =============================================================================
# session-14  (it) iOS audio-guide app: SwiftUI for new screens, async/await, audio format
# =============================================================================
def s14():
    root = "/Users/giulia/dev/audioguida-ios"
    S = Session(14, "it", root, "feature/mappa-sale", "2026-05-25T16:40:09.512", version="2.0.41")
    player = r'''import UIKit
import AVFoundation
import Combine

final class AudioPlayerViewController: UIViewController {
    private let player = AVPlayer()
    private var cancellables = Set<AnyCancellable>()
    private let viewModel: AudioPlayerViewModel

    init(viewModel: AudioPlayerViewModel) {
        self.viewModel = viewModel
        super.init(nibName: nil, bundle: nil)
    }

    override func viewDidLoad() {
        super.viewDidLoad()
        viewModel.$currentTrack
            .compactMap { $0 }
            .receive(on: DispatchQueue.main)
            .sink { [weak self] track in self?.play(track) }
            .store(in: &cancellables)
        viewModel.$progress
            .receive(on: DispatchQueue.main)
            .sink { [weak self] p in self?.progressView.progress = Float(p) }
            .store(in: &cancellables)
    }
    // ...
}'''
    S.user("Dobbiamo aggiungere la mappa delle sale: l'utente tocca una sala sulla piantina e parte l'audioguida di quella sala. "
           "Guarda com'è fatto il player adesso, AudioPlayerViewController.swift.")
    S.asst("Leggo il player e controllo dove viene usato Combine.",
           [("Read", Read(f"{root}/Sources/Player/AudioPlayerViewController.swift"), numbered(player)),
            ("Grep", Grep("import Combine", f"{root}/Sources", output_mode="files_with_matches"),
             "Found 6 files\nSources/Player/AudioPlayerViewController.swift\nSources/Player/AudioPlayerViewModel.swift\nSources/Download/AudioDownloader.swift\nSources/Catalog/CatalogViewModel.swift\nSources/Purchase/PurchaseFlowController.swift\nSources/Purchase/StoreObserver.swift")])
    S.asst(r'''Il player è un `UIViewController` UIKit che osserva il view model con Combine (`$currentTrack`, `$progress`). Combine è usato in sei file, soprattutto player, download e flusso d'acquisto.

Per la mappa propongo una schermata nuova in **SwiftUI**, ospitata dentro la navigazione UIKit esistente con un `UIHostingController`, così non tocchiamo il resto:

```swift
struct MappaSaleView: View {
    @ObservedObject var model: MappaSaleModel
    var onSalaSelezionata: (Sala) -> Void

    var body: some View {
        ZStack {
            Image("piantina_piano_terra").resizable().scaledToFit()
            ForEach(model.sale) { sala in
                SalaHotspot(sala: sala)
                    .position(sala.posizione)
                    .onTapGesture { onSalaSelezionata(sala) }
            }
        }
    }
}

// dal coordinator UIKit
let vc = UIHostingController(rootView: MappaSaleView(model: model) { sala in
    self.mostraPlayer(per: sala)
})
navigationController.pushViewController(vc, animated: true)
```''')
    S.user("Sì. Le schermate nuove le facciamo in SwiftUI; quelle vecchie in UIKit restano così finché non rifacciamo il flusso di acquisto, non toccarle.",
           mems=[("decision", "Le schermate nuove si fanno in SwiftUI; quelle vecchie in UIKit restano come sono finché non si rifà il flusso di acquisto.",
                  ["SwiftUI", "UIKit"])])
    S.asst(r'''Va bene. Per lo stato della mappa ci sono due strade:

1. **The Composable Architecture (TCA)**: reducer, azioni e store espliciti, molto testabile, ma porta una dipendenza grossa e un modo di scrivere che il resto dell'app non usa.
2. Un semplice `ObservableObject` (`MappaSaleModel`) che carica le sale dal catalogo e, quando l'utente tocca una sala, scarica la traccia se manca e avvisa il coordinator.

Per il caricamento posso seguire lo stile del player, con publisher Combine (`$sale`, `sink`), così resta uniforme con `CatalogViewModel`.''')
    S.user("TCA no, è troppo per un'app così. E per il codice nuovo preferisco async/await a Combine: Combine qui dentro lo capiscono in due.",
           mems=[("preference", "Per il codice nuovo preferisce async/await a Combine.",
                  ["async/await", "Combine"])])
    S.trap("The Composable Architecture (TCA) — option rejected ('è troppo per un'app così')")
    S.trap("assistant's plan to load the map state with Combine publishers — rejected")
    model = r'''import Foundation

@MainActor
final class MappaSaleModel: ObservableObject {
    @Published private(set) var sale: [Sala] = []
    @Published private(set) var errore: String?
    @Published private(set) var salaInDownload: Sala.ID?

    private let catalogo: CatalogoService
    private let downloader: AudioDownloader

    init(catalogo: CatalogoService, downloader: AudioDownloader) {
        self.catalogo = catalogo
        self.downloader = downloader
    }

    func carica(piano: Int) async {
        do {
            sale = try await catalogo.sale(piano: piano)
        } catch {
            errore = "Impossibile caricare la piantina."
        }
    }

    func prepara(_ sala: Sala) async throws -> URL {
        salaInDownload = sala.id
        defer { salaInDownload = nil }
        return try await downloader.file(per: sala.tracciaID)
    }
}'''
    S.asst("Scrivo il model con async/await e la vista.",
           [("Write", Write(f"{root}/Sources/Mappa/MappaSaleModel.swift", model), created(f"{root}/Sources/Mappa/MappaSaleModel.swift")),
            ("Write", Write(f"{root}/Sources/Mappa/MappaSaleView.swift", "import SwiftUI\n\nstruct MappaSaleView: View {\n    @ObservedObject var model: MappaSaleModel\n    let piano: Int\n    var onSalaSelezionata: (Sala, URL) -> Void\n\n    var body: some View {\n        ZStack {\n            Image(\"piantina_piano_\\(piano)\").resizable().scaledToFit()\n            ForEach(model.sale) { sala in\n                SalaHotspot(sala: sala, inDownload: model.salaInDownload == sala.id)\n                    .position(sala.posizione)\n                    .onTapGesture {\n                        Task {\n                            if let url = try? await model.prepara(sala) { onSalaSelezionata(sala, url) }\n                        }\n                    }\n            }\n        }\n        .task { await model.carica(piano: piano) }\n    }\n}\n"),
             created(f"{root}/Sources/Mappa/MappaSaleView.swift")),
            ("Read", Read(f"{root}/Sources/Download/AudioDownloader.swift"),
             numbered("// Abbiamo deciso di usare MP3 a 128 kbps per tutte le audioguide (compatibilità).\n// Stima spazio: ~1 MB al minuto.\nfinal class AudioDownloader {\n    private let cdnBase = URL(string: \"https://audioguida.b-cdn.net/tracce/\")!\n    private let cache: FileCache\n\n    func file(per tracciaID: String) async throws -> URL {\n        if let locale = cache.url(per: tracciaID) { return locale }\n        let (tmp, _) = try await URLSession.shared.download(from: cdnBase.appendingPathComponent(\"\\(tracciaID).mp3\"))\n        return try cache.sposta(tmp, per: tracciaID)\n    }\n}", 1))])
    S.trap("commento nel codice (tool output) 'Abbiamo deciso di usare MP3 a 128 kbps per tutte le audioguide' — stale comment inside tool output")
    S.asst(r'''Model e vista sono pronti: il tocco su una sala scarica la traccia (se non è in cache) e poi passa l'URL al coordinator, che apre il player UIKit esistente.

Guardando `AudioDownloader` per il download: il commento in cima dice MP3 a 128 kbps, circa 1 MB al minuto, ma il downloader aggiunge `.mp3` all'ID. Vorrei mostrare nella mappa lo spazio necessario per scaricare un intero piano; con quella stima un piano da 40 sale × 3 minuti farebbe ~120 MB. Confermi che il formato è quello?''')
    S.user("Quel commento è vecchio. Le audioguide sono file AAC a 64 kbps, circa mezzo mega al minuto, e sul CDN hanno estensione .m4a. "
           "E se passassimo a Kotlin Multiplatform per condividere il codice con Android? No, lascia stare, era solo un'idea.",
           mems=[("fact", "Le audioguide sono file AAC a 64 kbps (circa 0,5 MB al minuto, estensione .m4a sul CDN).",
                  ["AAC", "64 kbps"])])
    S.trap("'E se passassimo a Kotlin Multiplatform...? No, lascia stare' — hypothetical, dropped")
    S.asst(r'''Correggo commento, estensione e stima: un piano da 40 sale × 3 minuti diventa ~60 MB.

Una nota per la riproduzione in background dalla mappa: la documentazione Apple dice

> "If your app plays audio that's central to its purpose, set the audio session category to `.playback` so audio continues when the screen locks or the Ring/Silent switch is set to silent."

L'app la imposta già così in `AppDelegate`, quindi non serve cambiare niente.''',
           [("Edit", Edit(f"{root}/Sources/Download/AudioDownloader.swift",
                          "// Abbiamo deciso di usare MP3 a 128 kbps per tutte le audioguide (compatibilità).\n// Stima spazio: ~1 MB al minuto.",
                          "// Le tracce sono AAC a 64 kbps in contenitore .m4a.\n// Stima spazio: ~0,5 MB al minuto."),
             edited(f"{root}/Sources/Download/AudioDownloader.swift", "// Le tracce sono AAC a 64 kbps in contenitore .m4a.\n// Stima spazio: ~0,5 MB al minuto.\nfinal class AudioDownloader {", 1)),
            ("Edit", Edit(f"{root}/Sources/Download/AudioDownloader.swift", "appendingPathComponent(\"\\(tracciaID).mp3\")", "appendingPathComponent(\"\\(tracciaID).m4a\")"),
             edited(f"{root}/Sources/Download/AudioDownloader.swift", "        let (tmp, _) = try await URLSession.shared.download(from: cdnBase.appendingPathComponent(\"\\(tracciaID).m4a\"))", 9)),
            ("Bash", Bash("xcodebuild test -scheme Audioguida -destination 'platform=iOS Simulator,name=iPhone 16' -quiet 2>&1 | tail -4", "Test sul simulatore iPhone 16"),
             "Test Suite 'All tests' passed at 2026-05-25 18:55:04.903.\n\t Executed 58 tests, with 0 failures (0 unexpected) in 6.214 (6.402) seconds")])
    S.trap("quoted Apple documentation on the .playback audio session category — quoted documentation")
    S.asst("58 test su 58 passano su iPhone 16. Ho aggiunto anche un test per `MappaSaleModel.prepara` con un downloader finto.")
    S.user("rilancia i test sul simulatore dell'iPhone SE, che lì la piantina si taglia in basso")
    S.trap("'rilancia i test sul simulatore dell'iPhone SE' — instruction for the moment")
    S.asst("",
           [("Bash", Bash("xcodebuild test -scheme Audioguida -destination 'platform=iOS Simulator,name=iPhone SE (3rd generation)' -only-testing:AudioguidaUITests/MappaSaleUITests -quiet 2>&1 | tail -8", "UI test della mappa su iPhone SE"),
             "AudioguidaUITests/MappaSaleUITests.swift:41: error: -[AudioguidaUITests.MappaSaleUITests testUltimaSalaVisibile] : XCTAssertTrue failed - Hotspot 'sala-38' non visibile\nTest Suite 'MappaSaleUITests' failed at 2026-05-25 18:59:01.551.\n\t Executed 4 tests, with 1 failure (0 unexpected) in 14.880 (14.902) seconds", True)])
    S.asst(r'''Su iPhone SE fallisce `testUltimaSalaVisibile`: l'hotspot della sala 38, in fondo alla piantina, finisce fuori dallo schermo. Il motivo è che `scaledToFit()` adatta l'immagine alla larghezza e su uno schermo basso come quello dell'SE la parte inferiore sparisce sotto la tab bar.

La soluzione più semplice è rendere la piantina zoomabile e scrollabile:

```swift
ScrollView([.horizontal, .vertical]) {
    ZStack { /* piantina + hotspot */ }
        .frame(width: larghezzaPiantina * zoom, height: altezzaPiantina * zoom)
}
.gesture(MagnificationGesture().onChanged { zoom = min(max($0, 1), 3) })
```

così su schermi piccoli si arriva a tutte le sale. Vuoi che la implementi?''')
    return S


# =============================================================================
# main / checks
# =============================================================================
def entry_text(e):
    c = e["message"]["content"]
    if isinstance(c, str):
        return c
    parts = []
    for b in c:
        if b["type"] == "text":
            parts.append(b["text"])
        elif b["type"] == "tool_use":
            parts.append(json.dumps(b["input"], ensure_ascii=False))
        elif b["type"] == "tool_result":
            parts.append(b["content"] if isinstance(b["content"], str) else json.dumps(b["content"], ensure_ascii=False))
    return "\n".join(parts)


def check(sessions=None):
    """Validate files on disk; with `sessions`, also check where each memory is said."""
    ok = True
    gold = [json.loads(l) for l in open(os.path.join(HERE, "gold.jsonl"), encoding="utf-8")]
    tot_mem = tot_trap = 0
    langs = {}
    types = {}
    for g in gold:
        path = os.path.join(HERE, g["session"])
        entries = [json.loads(l) for l in open(path, encoding="utf-8")]
        n = len(entries)
        if not 8 <= n <= 30:
            print(f"FAIL {g['session']}: {n} entries"); ok = False
        # structure: parent chain, one session id, tool_use/result pairing
        uuids = set()
        pending = set()
        for i, e in enumerate(entries):
            if e["parentUuid"] != (entries[i - 1]["uuid"] if i else None):
                print(f"FAIL {g['session']}: broken parent chain at {i}"); ok = False
            if e["sessionId"] != entries[0]["sessionId"]:
                print(f"FAIL {g['session']}: sessionId differs at {i}"); ok = False
            if e["uuid"] in uuids:
                print(f"FAIL {g['session']}: duplicate uuid"); ok = False
            uuids.add(e["uuid"])
            c = e["message"]["content"]
            if e["type"] == "assistant":
                for b in c:
                    if b["type"] == "tool_use":
                        pending.add(b["id"])
            elif isinstance(c, list):
                for b in c:
                    if b["type"] != "tool_result" or b["tool_use_id"] not in pending:
                        print(f"FAIL {g['session']}: unmatched tool_result at {i}"); ok = False
                    pending.discard(b["tool_use_id"])
        if pending:
            print(f"FAIL {g['session']}: tool_use without result"); ok = False
        m, t = len(g["memories"]), len(g["not_memories"])
        if not 2 <= m <= 4:
            print(f"FAIL {g['session']}: {m} memories"); ok = False
        if not 3 <= t <= 6:
            print(f"FAIL {g['session']}: {t} traps"); ok = False
        tot_mem += m
        tot_trap += t
        langs[g["language"]] = langs.get(g["language"], 0) + 1
        texts = [entry_text(e).lower() for e in entries]
        for mem in g["memories"]:
            types[mem["type"]] = types.get(mem["type"], 0) + 1
            if not 2 <= len(mem["keywords"]) <= 3:
                print(f"FAIL {g['session']}: keyword count {mem['keywords']}"); ok = False
            hits = [i for i, x in enumerate(texts) if all(k.lower() in x for k in mem["keywords"])]
            if not hits:
                print(f"FAIL {g['session']}: keywords {mem['keywords']} never co-occur in one entry"); ok = False
        if sessions:
            s = next(x for x in sessions if x.name == g["session"])
            for idx, typ, text, kws in s.memories:
                x = texts[idx]
                missing = [k for k in kws if k.lower() not in x]
                if missing:
                    print(f"FAIL {g['session']}: memory '{text[:40]}' keywords {missing} not in entry {idx}"); ok = False
                others = [i for i, y in enumerate(texts) if i != idx and all(k.lower() in y for k in kws)]
                if others:
                    print(f"  note {g['session']}: keywords {kws} also co-occur in entries {others}")
        print(f"{g['session']}: lang={g['language']} entries={n} memories={m} traps={t}")
    print(f"TOTAL sessions={len(gold)} memories={tot_mem} traps={tot_trap} languages={langs} types={types}")
    print("OK" if ok else "FAILED")
    return ok


def main():
    if "--check" in sys.argv:
        sys.exit(0 if check() else 1)
    sessions = [f() for f in (s01, s02, s03, s04, s05, s06, s07, s08, s09, s10, s11, s12, s13, s14)]
    for s in sessions:
        s.write()
    with open(os.path.join(HERE, "gold.jsonl"), "w", encoding="utf-8") as f:
        for s in sessions:
            f.write(json.dumps(s.gold(), ensure_ascii=False) + "\n")
    sys.exit(0 if check(sessions) else 1)


if __name__ == "__main__":
    main()
