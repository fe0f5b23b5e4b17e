-- tests: fct_training_result
-- severity: structural
-- description: A score is a positive number of minutes.
-- A score is a positive number of minutes.
select * from fct_training_result where score_minutes <= 0
    or score_minutes_current_rules <= 0
