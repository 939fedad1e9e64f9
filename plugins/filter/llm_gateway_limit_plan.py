# Copyright: hpclab.cluster contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
name: llm_gateway_limit_plan
short_description: Each gateway user's daily token budget and concurrent-request limit
version_added: 0.4.0
description:
  - The llm_gateway role limits each user by O(limits) (C(llm_gateway_user_limits)), or by the user's own entry of
    O(by_user) (C(llm_gateway_user_limits_by_user)), key by key; a limit of 0 or none is no limit.
  - "Returns C(daily): C({user: tokens}) for the users with a daily token budget (hpclab-llm-usage enforces it), and
    C(concurrent): C({limit: [users]}) for the users with a concurrent-request limit, grouped by limit (nginx counts each
    group in its own C(limit_conn) zone keyed by the user's name)."
  - Input checked by C(llm_gateway_problems) first; this filter only plans.
options:
  _input:
    description: The users' names, in order.
    type: list
    elements: str
    required: true
  limits:
    description: "C({daily_tokens, concurrent_requests}), each a number; the limits of every user."
    type: dict
    default: {}
  by_user:
    description: "C({user: {daily_tokens, concurrent_requests}}): a user's own limits, over O(limits)."
    type: dict
    default: {}
"""

EXAMPLES = r"""
# ["alice", "bob"] | hpclab.cluster.llm_gateway_limit_plan(limits={"concurrent_requests": 4},
#                                                          by_user={"bob": {"daily_tokens": 100000, "concurrent_requests": 1}})
# => {"daily": {"bob": 100000}, "concurrent": {"4": ["alice"], "1": ["bob"]}}
- name: The users' limits
  ansible.builtin.set_fact:
    __plan: "{{ ['alice', 'bob'] | hpclab.cluster.llm_gateway_limit_plan(limits=llm_gateway_user_limits) }}"
"""

RETURN = r"""
_value:
  description: C(daily) (user to tokens) and C(concurrent) (limit, as a string, to the users in order).
  type: dict
"""


def llm_gateway_limit_plan(users, limits=None, by_user=None):
    """Filter entry point: see DOCUMENTATION."""
    from ansible_collections.hpclab.cluster.plugins.module_utils._llm_usage import (  # pylint: disable=import-outside-toplevel
        user_limits,
    )

    daily, concurrent = {}, {}
    for user in users:
        own = user_limits(user, limits, by_user)
        if own["daily_tokens"]:
            daily[user] = own["daily_tokens"]
        if own["concurrent_requests"]:
            concurrent.setdefault(str(own["concurrent_requests"]), []).append(user)
    return {"daily": daily, "concurrent": concurrent}


class FilterModule:
    """The llm_gateway role's per-user limits."""

    def filters(self):
        return {"llm_gateway_limit_plan": llm_gateway_limit_plan}
