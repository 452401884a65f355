#!/usr/bin/env bash
# Sources the bash completion of dlock alone (no bash-completion package) and checks what it
# offers for a few command lines.
#   completion_test.sh PATH/TO/dlock.bash
set -uo pipefail  # no -e: the completion runs as in an interactive shell
# shellcheck source=scripts/completion/dlock.bash
source "$1" || exit 1
work=$(mktemp -d /tmp/dlock-completion.XXXXXX) || exit 1
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
touch only-file
failures=0

# Splits the line into COMP_WORDS as interactive bash does: at blanks, and around runs of = and
# : (characters of COMP_WORDBREAKS), then runs the completion with the cursor at the end.
complete_line() {
  COMP_LINE=$1
  COMP_POINT=${#1}
  COMP_WORDS=()
  local token
  for token in $1; do
    while [[ $token =~ ^([^=:]*)([=:]+)(.*)$ ]]; do
      [[ -n ${BASH_REMATCH[1]} ]] && COMP_WORDS+=("${BASH_REMATCH[1]}")
      COMP_WORDS+=("${BASH_REMATCH[2]}")
      token=${BASH_REMATCH[3]}
    done
    [[ -n $token ]] && COMP_WORDS+=("$token")
  done
  [[ $1 == *' ' ]] && COMP_WORDS+=("")
  COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
  COMPREPLY=()
  _dlock
}

expect() {
  local line=$1 want=$2 got
  complete_line "$line"
  got=${COMPREPLY[*]}
  if [[ $got != "$want" ]]; then
    echo "FAIL: '$line<TAB>' offers '$got', expected '$want'" >&2
    failures=$((failures + 1))
  fi
}

expect_some() {
  local line=$1 want=$2
  complete_line "$line"
  if ! printf '%s\n' "${COMPREPLY[@]}" | grep -qx -- "$want"; then
    echo "FAIL: '$line<TAB>' offers '${COMPREPLY[*]}', without '$want'" >&2
    failures=$((failures + 1))
  fi
}

expect 'dlock r' 'run'
expect 'dlock ' 'run status list'
expect 'dlock --v' '--version'
expect 'dlock --backend zk://h:2181 s' 'status'
expect 'dlock run --on-lost ' 'term kill ignore'
expect 'dlock run --on-lost=k' 'kill'
expect 'dlock run --n' '--nonblock --nb'
expect 'dlock run -w ' ''
expect 'dlock status --j' '--json'
expect 'dlock --password-file on' 'only-file'
expect 'dlock --password-file=on' 'only-file'
# After NAME everything is the command: its name, then its own arguments.
expect_some 'dlock run -x /jobs/a ech' 'echo'
expect_some 'dlock run nightly -- ech' 'echo'
expect 'dlock run /jobs/a ls --on-lost ' 'only-file'
expect 'dlock run /jobs/a -c ' ''

# With bash-completion loaded, the command is completed by its own completion from the right
# word of COMP_WORDS, whatever bash split before it.
# shellcheck disable=SC2317  # called by _dlock
_command_offset() { COMPREPLY=("offset $1"); }
expect 'dlock --backend=zk://h:2181 run --max 2 /a -- ls -' 'offset 13'
expect 'dlock run /a ls -' 'offset 3'
unset -f _command_offset

if ((failures > 0)); then
  echo "$failures completion checks failed" >&2
  exit 1
fi
echo "bash completion: ok"
