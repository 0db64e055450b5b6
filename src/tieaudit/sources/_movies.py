"""The synthetic movie world shared by the ``movielens`` and ``genome2021`` generators: movies in
taste clusters with genres, titles and genome relevances (mostly low, ``Beta(1.1, 12)``, mean
~0.08, with a few high signature tags per cluster, so thresholding at 0.5 or keeping the top few
tags gives a handful of tags per movie from a limited set), and users who rate mostly in their
cluster. Each generator writes the world in its own release's layout."""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from tieaudit.data.gen import _choose_counts, _fill_distinct, _zipf_cdf
from tieaudit.common.seeds import make_rng

#: The share of movies with genome scores (ml-25m: 13,816 of 62,423).
GENOME_FRACTION = 0.4


# fmt: off
_GENRES = (
    "Action", "Adventure", "Animation", "Children", "Comedy", "Crime", "Documentary", "Drama",
    "Fantasy", "Film-Noir", "Horror", "IMAX", "Musical", "Mystery", "Romance", "Sci-Fi",
    "Thriller", "War", "Western",
)
_GENOME_TAGS = (
    "007", "18th century", "1920s", "action", "action packed", "adventure", "afi 100", "aliens",
    "alternate reality", "animation", "anime", "assassination", "atmospheric", "based on a book",
    "based on a true story", "beautiful scenery", "bittersweet", "black comedy", "bleak", "boxing",
    "brainwashing", "british", "chase", "cinematography", "classic", "clever", "coming of age",
    "computer animation", "conspiracy", "cult film", "cyberpunk", "dark", "dark comedy",
    "dialogue", "disney", "dystopia", "emotional", "epic", "family", "fantasy world", "feel-good",
    "film noir", "friendship", "funny", "gangsters", "ghosts", "gore", "great acting",
    "great ending", "heist", "high school", "historical", "horror", "idealism", "imdb top 250",
    "inspirational", "intense", "island", "jazz", "kids", "love story", "martial arts",
    "melancholic", "mental illness", "mindfuck", "musical", "mystery", "nonlinear", "nostalgic",
    "original", "oscar (best picture)", "paranoia", "philosophical", "pixar", "plot twist",
    "political", "post-apocalyptic", "prison", "psychological", "quirky", "revenge", "road trip",
    "robots", "romantic", "satire", "sci-fi", "serial killer", "space", "spies", "sports",
    "stylized", "superhero", "surreal", "suspense", "thought-provoking", "time travel",
    "twist ending", "vampires", "violence", "visually appealing", "war", "western", "witty",
    "zombies", "whimsical", "wilderness", "world war ii", "writers", "wuxia", "zany", "adaptation",
    "aging", "ambitious", "art", "betrayal", "biographical", "cars", "chess", "christmas",
    "circus",
)
_TITLE_WORDS = (
    "Silent", "River", "Night", "Empire", "Garden", "Stranger", "Winter", "Iron", "Glass", "Paper",
    "Moon", "Last", "Red", "City", "Dream", "Shadow", "Summer", "Machine", "Heart", "Road",
    "Ghost", "King", "Blue", "House", "Storm",
)
# fmt: on


MAX_GENOME_TAGS = 2000


@functools.cache
def _tag_vocabulary() -> tuple[str, ...]:
    """Genome-style tag strings: the hand-written ones, then two-word combinations of them (enough
    for the real 1,128 ml-25m tags and more)."""
    extra = (f"{a} {b.lower()}" for b in _TITLE_WORDS for a in _GENOME_TAGS)
    combos = [t for t in extra if t not in _GENOME_TAGS]
    return (_GENOME_TAGS + tuple(dict.fromkeys(combos)))[: MAX_GENOME_TAGS + 2]


@dataclass
class _MovieWorld:
    movie_ids: np.ndarray  # sorted, sparse
    n_clusters: int
    movie_cluster: np.ndarray
    popularity_rank: np.ndarray  # movie positions, most popular first
    scored: np.ndarray  # positions of movies with genome scores (sorted)
    tags: list[str]
    relevance: np.ndarray  # (len(scored), len(tags)) float64 in (0, 1)
    titles: list[str]
    genres: list[str]
    user_primary: np.ndarray
    user_movies: list[np.ndarray]  # positions, per user
    user_ratings: list[np.ndarray]  # 0.5 .. 5.0


def _movie_title(rng: np.random.Generator, year: int, kind: float) -> str:
    """A ml-25m-style title for a uniform ``kind`` draw: ``Name (Year)``, ``Name, The (Year)``,
    accented ``Misérables ..., Les (Year)``, ``"Quoted" Name (Year)``, ..."""
    w = [_TITLE_WORDS[int(i)] for i in rng.integers(0, len(_TITLE_WORDS), 3)]
    if kind < 0.12:
        return f"{w[0]} {w[1]}, The ({year})"
    if kind < 0.16:
        return f"Misérables {w[0]}, Les ({year})"
    if kind < 0.19:
        return f'"{w[0]} {w[1]}" {w[2]} ({year})'
    if kind < 0.3:
        return f"{w[0]} of the {w[1]} ({year})"
    if kind < 0.33:
        return f"{w[0]} {w[1]}: Part {int(rng.integers(2, 5))} ({year})"
    return f"{w[0]} {w[1]} ({year})"


def _movie_world(
    seed: int, name: str, n_users: int, n_movies: int, n_tags: int, min_ratings: int,
    coherence: float | None = None,
) -> _MovieWorld:
    rng = make_rng(seed, name, "world")
    if n_movies < 2 * min_ratings:
        raise ValueError(f"need at least {2 * min_ratings} movies, got {n_movies}")
    if not 4 <= n_tags <= MAX_GENOME_TAGS:
        raise ValueError(f"n_tags must be in [4, {MAX_GENOME_TAGS}], got {n_tags}")
    gaps = rng.geometric(0.35, size=n_movies)
    gaps[0] = 1
    movie_ids = np.cumsum(gaps)
    movie_ids[int(n_movies * 0.8) :] += 50_000  # later movies have large, sparse ids (as ml-25m)
    popularity_rank = rng.permutation(n_movies)
    n_scored = max(min(20, n_movies), int(round(GENOME_FRACTION * n_movies)))
    k = int(min(24, max(3, n_scored // 25)))  # ~25+ scored movies per taste cluster
    movie_cluster = rng.integers(0, k, n_movies)
    scored = np.sort(popularity_rank[:n_scored])
    vocabulary = _tag_vocabulary()
    if n_tags <= len(_GENOME_TAGS):  # hand-written tags only
        tags = sorted(_GENOME_TAGS[i] for i in rng.permutation(len(_GENOME_TAGS))[:n_tags])
    else:
        tags = sorted(vocabulary[i] for i in rng.permutation(len(vocabulary))[:n_tags])

    # genome relevance: low background, a few high "signature" tags per cluster
    n_sig = min(4, n_tags)
    signature = np.stack([rng.choice(n_tags, n_sig, replace=False) for _ in range(k)])
    rel = rng.beta(1.1, 12.0, size=(n_scored, n_tags))
    rows = np.arange(n_scored)
    sc = movie_cluster[scored]
    for s in range(n_sig):
        strong = rng.random(n_scored) < 0.85
        high = rng.uniform(0.6, 0.995, n_scored)
        mid = rng.uniform(0.3, 0.5, n_scored)
        rel[rows, signature[sc, s]] = np.where(strong, high, mid)
    extra = rng.random(n_scored) < 0.15
    extra_tag = rng.integers(0, n_tags, n_scored)
    rel[rows[extra], extra_tag[extra]] = np.maximum(
        rel[rows[extra], extra_tag[extra]], rng.uniform(0.5, 0.8, int(extra.sum()))
    )

    years = rng.integers(1920, 2020, n_movies)
    kinds = rng.random(n_movies)
    kinds[rng.choice(n_movies, 3, replace=False)] = (0.05, 0.15, 0.18)  # each quoting case occurs
    titles = [_movie_title(rng, int(y), float(kd)) for y, kd in zip(years, kinds, strict=True)]
    main_genres = [i for i, g in enumerate(_GENRES) if g not in ("IMAX", "Film-Noir")]
    cluster_genres = np.stack([rng.choice(main_genres, 2, replace=False) for _ in range(k)])
    genres = []
    for m in range(n_movies):
        g = set()
        for gi in cluster_genres[movie_cluster[m]].tolist():
            if rng.random() < 0.8:
                g.add(gi)
        if rng.random() < 0.4:
            g.add(int(rng.integers(len(_GENRES))))
        genres.append("|".join(_GENRES[i] for i in sorted(g)) if g else "(no genres listed)")

    # users: a primary cluster, ratings mostly in it and mostly on scored (popular) movies
    sizes = np.bincount(movie_cluster[scored], minlength=k).astype(float) + 1
    user_primary = rng.choice(k, size=n_users, p=sizes / sizes.sum())
    counts = _choose_counts(rng, n_users, min_ratings, 20.0, 300)
    counts = np.minimum(counts, max(n_movies // 4, min_ratings))  # leave unrated movies to sample
    unscored = popularity_rank[n_scored:] if n_scored < n_movies else popularity_rank
    unscored_cdf = _zipf_cdf(len(unscored), 0.9)
    scored_pools = [scored[movie_cluster[scored] == c] for c in range(k)]
    scored_cdfs = [_zipf_cdf(len(p)) if len(p) else np.ones(1) for p in scored_pools]
    scored_cdf = _zipf_cdf(len(scored), 0.5)
    user_movies, user_ratings = [], []
    for u in range(n_users):
        c = int(user_primary[u])
        # in-cluster genome movies, a few other genome movies, the rest outside the genome
        in_w, out_w = (0.4, 0.03)
        if coherence is not None:
            in_w, out_w = 0.43 * coherence, 0.43 * (1 - coherence)
        sources = [(out_w, scored, scored_cdf), (0.57, unscored, unscored_cdf)]
        if len(scored_pools[c]):
            sources.insert(0, (in_w, scored_pools[c], scored_cdfs[c]))
        have = np.array(_fill_distinct(rng, [], int(counts[u]), sources, n_movies))
        mine = movie_cluster[have] == c
        stars = np.where(mine, rng.normal(4.0, 0.7, len(have)), rng.normal(3.0, 1.0, len(have)))
        stars = np.clip(np.round(stars * 2) / 2, 0.5, 5.0)
        user_movies.append(have)
        user_ratings.append(stars)
    return _MovieWorld(
        movie_ids,
        k,
        movie_cluster,
        popularity_rank,
        scored,
        tags,
        rel,
        titles,
        genres,
        user_primary,
        user_movies,
        user_ratings,
    )
