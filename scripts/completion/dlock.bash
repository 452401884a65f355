# bash completion for dlock(1). Installed as share/bash-completion/completions/dlock; also
# works sourced alone, without the bash-completion package (it then completes the command after
# NAME with plain command and file names).

# Prints the words of the line up to the cursor's word as the user typed them, one per line,
# each as "INDEX WORD" where INDEX is its first piece in COMP_WORDS. Bash splits
# COMP_WORDS at every character of COMP_WORDBREAKS too (the = and : of --backend=zk://h:2181),
# so pieces not separated by blanks in COMP_LINE are joined again.
_dlock_words() {
  local line=$COMP_LINE rest trimmed joined=
  local -i i pos=0 start=0
  for ((i = 0; i <= COMP_CWORD; i++)); do
    rest=${line:pos}
    trimmed=${rest#"${rest%%[![:space:]]*}"}
    if ((i > 0 && ${#rest} != ${#trimmed})); then
      printf '%d %s\n' "$start" "$joined"
      joined=
      start=$i
    fi
    pos+=$((${#rest} - ${#trimmed} + ${#COMP_WORDS[i]}))
    joined+=${COMP_WORDS[i]}
  done
  printf '%d %s\n' "$start" "$joined"
}

# True for the options that take the next word as their value.
_dlock_takes_value() {
  case $1 in
    --backend | --password-file | -w | --wait | --timeout | -E | --conflict-exit-code | --max | \
      -c | --command | --on-lost | --kill-grace | --label) return 0 ;;
  esac
  return 1
}

_dlock() {
  local -a words starts
  local entry
  while IFS= read -r entry; do
    starts+=("${entry%% *}")
    words+=("${entry#* }")
  done < <(_dlock_words)
  local -i last=$((${#words[@]} - 1)) i
  local cur=${words[last]} option=

  # Find the subcommand and, for run, NAME: every word after NAME belongs to the command.
  local subcommand=
  local -i name=0
  for ((i = 1; i < last; i++)); do
    if _dlock_takes_value "${words[i]}"; then
      i+=1
    elif [[ ${words[i]} == -* ]]; then
      continue
    elif [[ -z $subcommand ]]; then
      subcommand=${words[i]}
    elif [[ $subcommand == run ]]; then
      name=$i
      break
    fi
  done

  if ((name > 0)); then
    local -i command=$((name + 1))
    [[ ${words[command]} == -- ]] && ((command < last)) && command+=1
    if [[ ${words[command]} == -c || ${words[command]} == --command ]] && ((command < last)); then
      COMPREPLY=()
    elif declare -F _command_offset >/dev/null; then
      _command_offset "${starts[command]}"
    elif ((command == last)); then
      mapfile -t COMPREPLY < <(compgen -c -- "$cur")
    else
      compopt -o filenames 2>/dev/null
      mapfile -t COMPREPLY < <(compgen -f -- "$cur")
    fi
    return
  fi

  # The value of an option: "--on-lost VALUE" or "--on-lost=VALUE" (bash then completes only
  # what follows the =).
  if [[ $cur == --*=* ]]; then
    option=${cur%%=*}
    cur=${cur#*=}
  elif ((last > 0)); then
    option=${words[last - 1]}
  fi
  case $option in
    --on-lost)
      mapfile -t COMPREPLY < <(compgen -W 'term kill ignore' -- "$cur")
      return
      ;;
    --password-file)
      compopt -o filenames 2>/dev/null
      mapfile -t COMPREPLY < <(compgen -f -- "$cur")
      return
      ;;
  esac
  if _dlock_takes_value "$option"; then
    COMPREPLY=()
    return
  fi

  local candidates
  case $subcommand in
    '') [[ $cur == -* ]] && candidates='--backend --password-file -h --help -V --version' ||
      candidates='run status list' ;;
    run) [[ $cur == -* ]] && candidates='-n --nonblock --nb -w --wait --timeout -E
      --conflict-exit-code -x --exclusive -s --shared --max -c --command --on-lost --kill-grace
      --label -v --verbose -h --help' ;;
    status | list) [[ $cur == -* ]] && candidates='--json -h --help' ;;
  esac
  mapfile -t COMPREPLY < <(compgen -W "${candidates:-}" -- "$cur")
}

complete -F _dlock dlock
