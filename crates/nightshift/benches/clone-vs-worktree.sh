#!/bin/sh
# git-level cost of one attempt checkout on a 10,002-file repository: today's worktree add/remove
# against the clone nightshift now makes (init + alternates + update-ref + read-tree -u, rm -rf),
# and against the reuse of a pooled clone (git/clone.rs `clone_reset`: .git made again, the
# saved index installed, clean -ffdx, read-tree --reset -u to the next base, clean, status,
# index saved), where the previous attempt edited one file and added one, and the next base
# differs from the last by one file.
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
wt=0; cl=0; po=0
# The pooled clone: made once, as nightshift makes it, its index saved.
pc=.nightshift/pool/c
git -c core.hooksPath=/dev/null init --quiet --template= --initial-branch=nightshift/p/0 $pc
printf '[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tlogallrefupdates = true\n' > $pc/.git/config
mkdir -p $pc/.git/objects/info; echo "$PWD/.git/objects" > $pc/.git/objects/info/alternates
git -C $pc update-ref refs/heads/nightshift/p/0 $base
git -C $pc read-tree --reset -u HEAD
cp $pc/.git/index .nightshift/pool/c.index
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
  # The previous attempt's work; the next base (one file changed on main).
  echo "work $k" >> $pc/d1/f1.txt; echo new > $pc/new-$k.txt
  echo "main $k" >> d2/f2.txt; git add d2/f2.txt
  next=$(git -c user.name=b -c user.email=b@b commit-tree -p $base -m next "$(git write-tree)")
  git reset -q
  t3=$(now)
  rm -rf $pc/.git
  git -c core.hooksPath=/dev/null init --quiet --template= --initial-branch=nightshift/p/$k $pc
  printf '[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tlogallrefupdates = true\n' > $pc/.git/config
  mkdir -p $pc/.git/objects/info; echo "$PWD/.git/objects" > $pc/.git/objects/info/alternates
  git -C $pc -c core.hooksPath=/dev/null update-ref refs/heads/nightshift/p/$k $next
  cp -p .nightshift/pool/c.index $pc/.git/index
  git -C $pc -c core.hooksPath=/dev/null diff-index --cached --name-only $next -- ':(glob)**/.gitattributes' >/dev/null
  git -C $pc -c core.hooksPath=/dev/null -c core.trustctime=true clean -ffdxq
  git -C $pc -c core.hooksPath=/dev/null -c core.trustctime=true read-tree --reset -u $next
  git -C $pc -c core.hooksPath=/dev/null clean -ffdxq
  test -z "$(git -C $pc -c core.hooksPath=/dev/null status --porcelain --ignored --untracked-files=all)"
  cp $pc/.git/index .nightshift/pool/c.index
  t4=$(now)
  wt=$((wt + t1 - t0)); cl=$((cl + t2 - t1)); po=$((po + t4 - t3))
done
echo "worktree add+remove: $((wt / N / 1000000)) ms per attempt; clone create+remove: $((cl / N / 1000000)) ms per attempt; pooled clone reset: $((po / N / 1000000)) ms per attempt ($N each, interleaved)"
cd /; rm -rf "$d"
