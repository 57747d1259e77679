#!/bin/sh
# git-level cost of one attempt checkout on a 10,002-file repository: today's worktree add/remove
# against the clone nightshift now makes (init + alternates + update-ref + read-tree -u, rm -rf).
set -eu
d=$(mktemp -d); cd "$d"
export GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1
git init -q -b main repo; cd repo
for i in $(seq 0 99); do mkdir -p d$i; for j in $(seq 0 99); do echo "f $i $j" > d$i/f$j.txt; done; done
echo a > a; echo b > b
git add -A; git -c user.name=b -c user.email=b@b commit -qm init
base=$(git rev-parse HEAD)
mkdir -p .nightshift/worktrees
N=${N:-10}
now() { date +%s%N; }
wt=0; cl=0
for k in $(seq 1 $N); do
  t0=$(now)
  git -c core.hooksPath=/dev/null worktree add --quiet --lock --reason r -B nightshift/w/$k .nightshift/worktrees/w-$k $base
  git -c core.hooksPath=/dev/null worktree remove --force --force .nightshift/worktrees/w-$k
  git worktree prune
  t1=$(now)
  p=.nightshift/worktrees/c-$k
  git -c core.hooksPath=/dev/null init --quiet --template= --initial-branch=nightshift/c/$k $p
  printf '[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tlogallrefupdates = true\n' > $p/.git/config
  mkdir -p $p/.git/objects/info; echo "$PWD/.git/objects" > $p/.git/objects/info/alternates
  git -C $p -c core.hooksPath=/dev/null update-ref refs/heads/nightshift/c/$k $base
  git -C $p -c core.hooksPath=/dev/null read-tree --reset -u HEAD
  rm -rf $p
  t2=$(now)
  wt=$((wt + t1 - t0)); cl=$((cl + t2 - t1))
done
echo "worktree add+remove: $((wt / N / 1000000)) ms per attempt; clone create+remove: $((cl / N / 1000000)) ms per attempt ($N each, interleaved)"
cd /; rm -rf "$d"
